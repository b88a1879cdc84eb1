"""The state of one CX import (`_Import`): the ZIP's files, the notes so far, which
files were read into Statecraft objects (the rest is carried), and how a CX object, a text
field and an unknown field are read and reported."""

from __future__ import annotations

import base64
import difflib
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.core.cx.carry import camel_keys
from agents.core.cx.fields import FIELDS
from agents.core.cx.layout import INFO, E, W, _last_segment, _note
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.form_text import json_error_message
from agents.core.formats import load_yaml, not_json_data

_OUTPUT_ONLY = frozenset(
    {
        "createTime",
        "updateTime",
        "etag",
        "deploymentCount",
        "locked",
        "validationErrors",
        "generatedSummary",
    }
)


@dataclass
class _Import:
    files: Mapping[str, bytes]
    found: list[Diagnostic] = field(default_factory=list)
    consumed: set[str] = field(default_factory=set)  # files read into Statecraft objects
    app_path: str = "app.json"  # or app.yaml
    # Folders whose object file could not be read ("tools" → {"T"}): its own error says so,
    # so a reference to it is not also reported as missing from the ZIP.
    unreadable: dict[str, set[str]] = field(default_factory=dict)

    def unreadable_ref(self, top: str, reference: str) -> bool:
        folders = self.unreadable.get(top, set())
        return reference in folders or _last_segment(reference) in folders

    def note(self, code: str, severity: Severity, file: str | None, where: str, msg: str) -> None:
        self.found.append(_note(code, severity, file, where, msg))

    def json_object(self, path: str) -> dict[str, Any] | None:
        """A CX object from its .json file, or its .yaml one (keys as the JSON form has them)."""
        value = self._json_object(path)
        parts = path.split("/")
        if value is None and len(parts) >= 3:
            self.unreadable.setdefault(parts[0], set()).add(parts[1])
        return value

    def _json_object(self, path: str) -> dict[str, Any] | None:
        text = self.text_file(path)
        if text is None:
            return None
        form = path.removesuffix(".tftpl")  # a Terraform template: the format inside
        try:
            if form.endswith((".yaml", ".yml")):
                value = camel_keys(load_yaml(text), depth=4)
            else:
                value = json.loads(text)
        except json.JSONDecodeError as exc:
            # The field names the file and the place (app.json:5:12), as a compiler would.
            message = Message("not valid JSON: %(problem)s", problem=json_error_message(exc))
            self.found.append(
                Diagnostic(
                    "SC605",
                    E,
                    Message("%(file)s: %(message)s", file=path, message=message),
                    line=exc.lineno,
                    column=exc.colno,
                    field=f"{path}:{exc.lineno}:{exc.colno}",
                    subject=path,
                )
            )
            return None
        except ValueError as exc:
            self.note("SC605", E, path, "", Message("not valid YAML (%(exc)s)", exc=exc))
            return None
        except RecursionError:
            self.note("SC605", E, path, "", Message("nested too deeply"))
            return None
        if not isinstance(value, dict):
            self.note("SC605", E, path, "", Message("must hold a JSON object"))
            return None
        problem = not_json_data(value)
        if problem:
            self.note("SC605", E, path, problem.field or "", problem.message)
            return None
        return value

    def text_file(self, path: str) -> str | None:
        self.consumed.add(path)
        try:
            return self.files[path].decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            self.note(
                "SC605",
                E,
                path,
                "",
                Message("not UTF-8 text (byte %(start)s)", start=exc.start + 1),
            )
            return None

    def text_field(self, owner: str, where: str, value: Any) -> str | None:
        """A text given by the file it names (from the app root or the JSON's folder) or inline."""
        if value is None:
            return ""
        if not isinstance(value, str):
            self.note("SC606", E, owner, where, Message("must be text"))
            return None
        candidates = [value, posixpath.normpath(posixpath.join(posixpath.dirname(owner), value))]
        for candidate in candidates:
            if candidate in self.files:
                return self.text_file(candidate)
        if "\n" not in value and re.search(r"\.(py|txt|ya?ml|json)$", value.strip()):
            self.note(
                "SC608",
                E,
                owner,
                where,
                Message("names the file %(value)s, not in the ZIP", value=repr(value)),
            )
            return None
        return value

    def unknown_fields(
        self,
        owner: str,
        data: Mapping[str, Any],
        used: frozenset[str],
        behaviour: frozenset[str],
        prefix: str = "",
        message_type: str = "",
    ) -> None:
        """Note each field Statecraft does not edit: kept as is; one that the CX resource
        (`message_type`, as in `cx.fields`) does not have is a warning with a suggestion."""
        known = FIELDS.get(message_type)
        for key, value in data.items():
            if known is not None and key not in known and not str(key).startswith("_"):
                close = difflib.get_close_matches(str(key), sorted(known), n=1)
                hint = Message("did you mean `%(close)s`? ", close=close[0]) if close else ""
                message = Message(
                    "`%(key)s` is not a field of a CX %(message_type)s: "
                    "%(hint)skept as it is, but CX will reject or ignore it",
                    key=key,
                    message_type=message_type,
                    hint=hint,
                )
                self.note("SC607", W, owner, f"{prefix}{key}", message)
                continue
            if key in used or key in _OUTPUT_ONLY or value in (None, "", [], {}, False):
                continue
            if key in behaviour:
                message = Message(
                    "kept as is and written back on export; the simulation does not apply it"
                )
                self.note("SC607", W, owner, f"{prefix}{key}", message)
            else:
                message = Message("kept as is and written back on export")
                self.note("SC607", INFO, owner, f"{prefix}{key}", message)

    def object_file(self, folder: str) -> str | None:
        """``<folder>/<name>.json`` or ``.yaml`` (CX's two layouts), whichever the ZIP has."""
        name = posixpath.basename(folder)
        for ext in ("json", "yaml", "yml"):
            if f"{folder}/{name}.{ext}" in self.files:
                return f"{folder}/{name}.{ext}"
        return None

    def folders(self, top: str) -> list[str]:
        """The folders under `top` (``agents``, ``tools``, ``toolsets``), sorted."""
        return sorted(
            {p.split("/")[1] for p in self.files if p.startswith(f"{top}/") and p.count("/") >= 2}
        )

    def keep(self, prefix: str) -> None:
        """The files under `prefix` stay in the carry, verbatim, even if they were read."""
        self.consumed.difference_update(p for p in self.files if p.startswith(prefix))

    def carried_files(self) -> dict[str, Any]:
        """Every file no Statecraft object was read from, verbatim (text; else base64)."""
        texts: dict[str, str] = {}
        binary: dict[str, str] = {}
        for path in sorted(self.files):
            if path in self.consumed:
                continue
            try:
                texts[path] = self.files[path].decode("utf-8")
            except UnicodeDecodeError:
                binary[path] = base64.b64encode(self.files[path]).decode("ascii")
        return {"files": texts, **({"binary": binary} if binary else {})}
