"""A CX app's files read as one comparable tree: "semantically equal" for the round-trip tests.

Two exports are the same app when ``cx_tree`` gives equal trees. What the tree forgets is
what CX itself does not tell apart:

- **file layout**: an object read from ``X.json`` or ``X.yaml``, a text inline or in the
  file a field names (the file's content replaces the path), JSON or YAML documents parsed;
- **ids**: an agent, tool or toolset is known by its display name; references to it
  (``rootAgent``, ``childAgents``, ``tools``, ``toolsets[].toolset``) are rewritten to that
  name, and the object's own ``name`` (an id, often a UUID) is dropped;
- **proto3 defaults**: a field that is missing, null, "", [] or {} is one and the same.

Every other field and value, at any depth, counts; so do the other files of the folder
(notes, datasets), compared as text.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any

import yaml

OBJECT_DIRS = (
    "agents",
    "tools",
    "toolsets",
    "guardrails",
    "evaluations",
    "evaluationDatasets",
    "evaluationExpectations",
)
_SOURCE = (".json", ".yaml", ".yml")


def _load(path: str, data: bytes) -> Any:
    text = data.decode("utf-8-sig")
    if path.endswith(".json"):
        return json.loads(text)
    return yaml.safe_load(text)


def _root(files: Mapping[str, bytes]) -> str:
    apps = [p for p in files if posixpath.basename(p) in ("app.json", "app.yaml")]
    top = min(apps, key=lambda p: p.count("/"))
    return top[: -len(posixpath.basename(top))]


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def cx_tree(files: Mapping[str, bytes]) -> dict[str, Any]:
    root = _root(files)
    inside = {p[len(root) :]: d for p, d in files.items() if p.startswith(root)}
    objects: dict[str, dict[str, Any]] = {}  # "agents/<folder>" -> parsed object
    used: set[str] = set()
    app_path = "app.json" if "app.json" in inside else "app.yaml"
    app = _load(app_path, inside[app_path])
    used.add(app_path)
    for path in sorted(inside):
        parts = path.split("/")
        if (
            len(parts) == 3
            and parts[0] in OBJECT_DIRS
            and parts[2].startswith(parts[1] + ".")
            and parts[2].endswith(_SOURCE)
        ):
            objects[f"{parts[0]}/{parts[1]}"] = _load(path, inside[path])
            used.add(path)

    def resolve(value: Any, owner: str) -> Any:
        if isinstance(value, dict):
            return {k: resolve(v, owner) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v, owner) for v in value]
        if isinstance(value, str) and "\n" not in value:
            for candidate in (value, posixpath.normpath(posixpath.join(owner, value))):
                if candidate in inside:
                    used.add(candidate)
                    data = inside[candidate]
                    if candidate.endswith((".yaml", ".yml", ".json")):
                        try:
                            return _load(candidate, data)
                        except (ValueError, yaml.YAMLError):
                            pass
                    return data.decode("utf-8-sig")
        return value

    names: dict[str, dict[str, str]] = {kind: {} for kind in OBJECT_DIRS}
    for key, data in objects.items():
        kind, folder = key.split("/")
        display = data.get("displayName") or folder
        for alias in (folder, data.get("name"), display):
            if isinstance(alias, str) and alias:
                names[kind][alias] = display
                names[kind][alias.rsplit("/", 1)[-1]] = display

    def ref(kind: str, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return names[kind].get(value) or names[kind].get(value.rsplit("/", 1)[-1]) or value

    tree: dict[str, Any] = {}
    app = resolve(app, "")
    app.pop("name", None)
    if "rootAgent" in app:
        app["rootAgent"] = ref("agents", app["rootAgent"])
    tree["app"] = _prune(app)
    for key, data in objects.items():
        kind, folder = key.split("/")
        data = resolve(data, key)
        display = data.get("displayName") or folder
        if kind in ("agents", "tools", "toolsets", "guardrails"):
            data.pop("name", None)
        if kind == "agents":
            data["tools"] = sorted(ref("tools", t) for t in data.get("tools", []))
            data["childAgents"] = sorted(ref("agents", a) for a in data.get("childAgents", []))
            for entry in data.get("toolsets", []):
                if isinstance(entry, dict) and "toolset" in entry:
                    entry["toolset"] = ref("toolsets", entry["toolset"])
        tree[f"{kind}/{display}"] = _prune(data)
    for path in sorted(set(inside) - used):
        try:
            tree[f"file:{path}"] = inside[path].decode("utf-8-sig")
        except UnicodeDecodeError:
            tree[f"file:{path}"] = inside[path]
    return tree


def corpus_apps(root) -> list:
    """Every app folder (with app.json or app.yaml) of the corpus, sorted."""
    found = {p.parent for name in ("app.json", "app.yaml") for p in root.rglob(name)}
    return sorted(found)


def folder_files(folder) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)).replace("\\", "/"): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file()
    }


def without_cx(value: Any) -> Any:
    """A spec (or a tuple/list of specs) with every ``cx`` carry emptied: for comparing what
    Statecraft edits of an app imported from CX with an app made in Statecraft."""
    from dataclasses import fields, is_dataclass, replace

    if isinstance(value, (tuple, list)):
        return type(value)(without_cx(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: without_cx(getattr(value, f.name)) for f in fields(value)}
        if "cx" in changes:
            changes["cx"] = {}
        return replace(value, **changes)
    return value
