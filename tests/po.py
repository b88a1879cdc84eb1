"""A small reader and writer of gettext .po files (no polib needed).

An entry is a dict: ``msgid``, optional ``msgctxt`` and ``msgid_plural``, ``msgstr`` (form
number → text), ``flags`` (``fuzzy``, ``python-format``...) and ``comments`` (the raw ``#``
lines). The i18n tests parse the catalogs with it; ``dump`` writes them back.
"""

from __future__ import annotations

import re
from typing import Any

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r"}
_KEYWORD = re.compile(r'(msgctxt|msgid_plural|msgid|msgstr(?:\[(\d+)\])?)\s+(".*")$')


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def parse(text: str) -> list[dict[str, Any]]:
    """The entries of a .po text, the header (msgid "") first."""
    entries: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    key: tuple[str, int | None] = ("msgid", None)
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if current is not None and "msgid" in current:
                entries.append(current)
            current = None
            continue
        if current is None:
            current = {"comments": [], "flags": set(), "msgstr": {}}
        if line.startswith("#,"):
            current["flags"] |= {flag.strip() for flag in line[2:].split(",")}
        elif line.startswith("#"):
            current["comments"].append(line)
        elif match := _KEYWORD.match(line):
            kind, index, value = match.group(1), match.group(2), _unescape(match.group(3)[1:-1])
            if kind.startswith("msgstr"):
                key = ("msgstr", int(index) if index else 0)
                current["msgstr"][key[1]] = value
            else:
                key = (kind, None)
                current[kind] = value
        elif line.startswith('"'):
            value = _unescape(line.strip()[1:-1])
            if key[0] == "msgstr":
                current["msgstr"][key[1]] += value
            else:
                current[key[0]] += value
    return entries


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def _quoted(text: str) -> str:
    if "\n" in text[:-1]:
        parts = text.split("\n")
        pieces = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        return '""\n' + "\n".join(f'"{_escape(piece)}"' for piece in pieces)
    return f'"{_escape(text)}"'


def dump(entries: list[dict[str, Any]]) -> str:
    """The .po text of `entries` (what `parse` reads back)."""
    blocks = []
    for entry in entries:
        lines = list(entry["comments"])
        flags = sorted(entry["flags"] - {""})
        if flags:
            lines.append("#, " + ", ".join(flags))
        if "msgctxt" in entry:
            lines.append("msgctxt " + _quoted(entry["msgctxt"]))
        lines.append("msgid " + _quoted(entry["msgid"]))
        if "msgid_plural" in entry:
            lines.append("msgid_plural " + _quoted(entry["msgid_plural"]))
            for form in sorted(entry["msgstr"]):
                lines.append(f"msgstr[{form}] " + _quoted(entry["msgstr"][form]))
        else:
            lines.append("msgstr " + _quoted(entry["msgstr"].get(0, "")))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
