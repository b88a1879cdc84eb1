"""The Python names an ADK package gives an app and its agents (identifiers, unique)."""

from __future__ import annotations

import keyword
import re
import unicodedata

from agents.core.spec import AppSpec

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]+")


def identifier(name: str, *, lower: bool = False) -> str:
    """A Python identifier for a name (accents dropped, other characters ``_``)."""
    plain = unicodedata.normalize("NFKD", name.strip()).encode("ascii", "ignore").decode()
    text = _NOT_IDENTIFIER.sub("_", plain).strip("_") or "app"
    if lower:
        text = text.lower()
    if text[0].isdigit() or keyword.iskeyword(text):
        text = f"_{text}"
    return text


def package_name(app: AppSpec) -> str:
    return identifier(app.name, lower=True)


def agent_names(app: AppSpec) -> dict[str, str]:
    """Display name → ADK agent name (an identifier, unique, never ``user``)."""
    taken: set[str] = {"user"}
    out: dict[str, str] = {}
    for agent in app.agents:
        base = identifier(agent.name)
        candidate, n = base, 2
        while candidate.casefold() in taken:
            candidate, n = f"{base}_{n}", n + 1
        taken.add(candidate.casefold())
        out[agent.name] = candidate
    return out
