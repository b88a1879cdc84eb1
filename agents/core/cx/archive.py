"""The ZIP of a CX app: written deterministically (`zip_bytes`) and read without
trusting it (`read_zip`: size, count, path and encryption limits; never raises)."""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from collections.abc import Mapping

from agents.core.cx.layout import E
from agents.core.diagnostics import Diagnostic, Message

__all__ = ["MAX_ZIP_BYTES", "MAX_ZIP_FILES", "MAX_ZIP_FILE_BYTES", "read_zip", "zip_bytes"]


MAX_ZIP_FILES = 1_000
MAX_ZIP_BYTES = 50 * 1024 * 1024
MAX_ZIP_FILE_BYTES = 10 * 1024 * 1024


def zip_bytes(files: Mapping[str, bytes]) -> bytes:
    """A deterministic ZIP of `files` (sorted, fixed timestamps, deflated)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[path])
    return buffer.getvalue()


def _unsafe_path(name: str) -> bool:
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\x00" in name:
        return True
    return any(part == ".." for part in name.split("/"))


def read_zip(data: bytes) -> tuple[dict[str, bytes] | None, tuple[Diagnostic, ...]]:
    """The files of a ZIP (path → bytes), or None and why it is refused. Never raises.

    Refused: more than MAX_ZIP_FILES files, more than MAX_ZIP_BYTES unpacked
    (checked on the sizes the ZIP declares and again while reading, so a
    lying header does not help), a file over MAX_ZIP_FILE_BYTES, a path that
    is absolute or climbs out with ``..``, a path twice, encrypted entries.
    Folders and macOS ``__MACOSX/`` / ``.DS_Store`` entries are skipped.
    """

    def refuse(code: str, message: str) -> tuple[None, tuple[Diagnostic, ...]]:
        return None, (Diagnostic(code, E, message, field="(zip)"),)

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        return refuse("SC601", Message("the upload is not a readable ZIP (%(exc)s)", exc=exc))
    with archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        if len(infos) > MAX_ZIP_FILES:
            return refuse(
                "SC602",
                Message(
                    "the ZIP has %(infos_count)s files; at most %(max_zip_files)s",
                    infos_count=len(infos),
                    max_zip_files=MAX_ZIP_FILES,
                ),
            )
        declared = sum(info.file_size for info in infos)
        if declared > MAX_ZIP_BYTES:
            return refuse(
                "SC602",
                Message(
                    "the ZIP unpacks to %(declared)s MB; at most %(max_zip_bytes)s MB",
                    declared=declared // (1024 * 1024),
                    max_zip_bytes=MAX_ZIP_BYTES // (1024 * 1024),
                ),
            )
        files: dict[str, bytes] = {}
        total = 0
        for info in infos:
            name = info.filename.replace("\\", "/")
            if _unsafe_path(name):
                return refuse(
                    "SC603",
                    Message(
                        "%(filename)s: the path leaves the ZIP's folder", filename=info.filename
                    ),
                )
            name = posixpath.normpath(name)
            base = posixpath.basename(name)
            if name.startswith("__MACOSX/") or base == ".DS_Store":
                continue
            if name in files:
                return refuse(
                    "SC603", Message("%(name)s: the ZIP holds this path twice", name=name)
                )
            if info.flag_bits & 0x1:
                return refuse(
                    "SC601", Message("%(name)s: encrypted files cannot be read", name=name)
                )
            if info.file_size > MAX_ZIP_FILE_BYTES:
                return refuse(
                    "SC602",
                    Message(
                        "%(name)s: a file over %(max_zip_file_bytes)s KB",
                        name=name,
                        max_zip_file_bytes=MAX_ZIP_FILE_BYTES // 1024,
                    ),
                )
            try:
                with archive.open(info) as stream:
                    content = stream.read(MAX_ZIP_FILE_BYTES + 1)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as exc:
                return refuse(
                    "SC601", Message("%(name)s: cannot be unpacked (%(exc)s)", name=name, exc=exc)
                )
            except Exception as exc:  # zlib.error and friends: a damaged member
                return refuse(
                    "SC601",
                    Message(
                        "%(name)s: cannot be unpacked (%(error)s)",
                        name=name,
                        error=type(exc).__name__,
                    ),
                )
            if len(content) > MAX_ZIP_FILE_BYTES:
                return refuse(
                    "SC602",
                    Message(
                        "%(name)s: a file over %(max_zip_file_bytes)s KB",
                        name=name,
                        max_zip_file_bytes=MAX_ZIP_FILE_BYTES // 1024,
                    ),
                )
            total += len(content)
            if total > MAX_ZIP_BYTES:
                return refuse(
                    "SC602",
                    Message(
                        "the ZIP unpacks to more than %(max_zip_bytes)s MB",
                        max_zip_bytes=MAX_ZIP_BYTES // (1024 * 1024),
                    ),
                )
            files[name] = content
    return files, ()
