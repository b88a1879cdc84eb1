"""The native document as text: JSON or YAML, read safely and within limits."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any

from agents.core import limits
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.form_text import json_error_message

MAX_NATIVE_BYTES = 5 * 1024 * 1024
MAX_NATIVE_DEPTH = limits.MAX_JSON_DEPTH  # one limit for every JSON value a person sends

E = Severity.ERROR


def dumps_native(doc: Mapping[str, Any], fmt: str = "json") -> str:
    """The document as JSON (indented, UTF-8) or YAML (block style, multi-line text as `|`)."""
    if fmt == "json":
        return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    if fmt == "yaml":
        import yaml  # only the YAML path needs PyYAML

        return yaml.dump(
            doc,
            Dumper=_yaml_dumper(),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=100,
        )
    raise ValueError(f"unknown format {fmt!r}: use 'json' or 'yaml'")


@functools.cache
def _yaml_dumper() -> type:
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:  # never write &anchors / *aliases
            return True

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return Dumper


@functools.cache
def _yaml_loader() -> type:
    import yaml

    # libyaml's C parser when PyYAML has it (about 10x faster); aliases are then found
    # after composing (`_refuse_aliases`), as the C composer cannot be hooked.
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    "an alias (*name) repeats another part of the file; write values out",
                    event.start_mark,
                )
            return super().compose_node(parent, index)

    # A date stays the text it was written as (JSON has no dates).
    Loader.add_constructor("tag:yaml.org,2002:timestamp", Loader.construct_yaml_str)
    return Loader


def load_yaml(text: str) -> Any:
    """Safe YAML (no aliases, dates as text); raises ValueError with the line on a problem."""
    import yaml

    loader = _yaml_loader()(text)  # a (C)SafeLoader subclass
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_aliases(node)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ValueError(f"{where}{exc.problem or exc.context}") from exc
    except (yaml.YAMLError, RecursionError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from exc
    finally:
        loader.dispose()


def _refuse_aliases(root: Any) -> None:
    """An alias makes a node appear twice in the composed graph: refuse it, with its line."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias (*name) repeats another part of the file; write values out",
                node.start_mark,
            )
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_native(
    text: str | bytes, *, max_yaml_bytes: int = limits.DEFAULT_MAX_YAML_BYTES
) -> tuple[Any, tuple[Diagnostic, ...]]:
    """The document in `text`, JSON or YAML (told apart by a leading ``{``).

    YAML over `max_yaml_bytes` is refused (parsing YAML is far slower than JSON).
    Returns ``(None, errors)`` when the text cannot be read; never raises.
    """
    if isinstance(text, bytes):
        if len(text) > MAX_NATIVE_BYTES:
            return None, (_too_large(len(text)),)
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            message = Message("the file is not UTF-8 text (byte %(start)s)", start=exc.start + 1)
            return None, (Diagnostic("SC501", E, message, field="(file)"),)
    text = text.removeprefix("\ufeff")
    if len(text.encode("utf-8")) > MAX_NATIVE_BYTES:
        return None, (_too_large(len(text.encode("utf-8"))),)
    stripped = text.lstrip()
    if not stripped:
        return None, (Diagnostic("SC501", E, Message("the file is empty"), field="(file)"),)
    try:
        if stripped.startswith("{"):
            try:
                doc = json.loads(text, parse_constant=_reject_constant)
            except json.JSONDecodeError as exc:
                message = Message("not valid JSON: %(problem)s", problem=json_error_message(exc))
                return None, (Diagnostic("SC501", E, message, line=exc.lineno, field="(file)"),)
        else:
            too_large = limits.yaml_too_large(len(text.encode("utf-8")), max_yaml_bytes)
            if too_large is not None:
                return None, (too_large,)
            doc = load_yaml(text)
    except RecursionError:
        return None, (_too_deep(),)
    except ValueError as exc:
        message = Message("not valid JSON or YAML (%(exc)s)", exc=exc)
        return None, (Diagnostic("SC501", E, message, field="(file)"),)
    problem = not_json_data(doc)
    if problem:
        return None, (problem,)
    return doc, ()


def _too_large(size: int) -> Diagnostic:
    message = Message(
        "the file is %(size)s KB; at most %(max_native_bytes)s MB",
        size=size // 1024,
        max_native_bytes=MAX_NATIVE_BYTES // 1024 // 1024,
    )
    return Diagnostic("SC502", E, message, field="(file)")


def _too_deep() -> Diagnostic:
    message = Message(
        "the file is nested more than %(max_native_depth)s levels deep",
        max_native_depth=MAX_NATIVE_DEPTH,
    )
    return Diagnostic("SC502", E, message, field="(file)")


def not_json_data(value: Any, where: str = "") -> Diagnostic | None:
    """An error if `value` is not plain JSON data (or deeper than MAX_NATIVE_DEPTH)."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_NATIVE_DEPTH:
            return _too_deep()
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    message = Message(
                        "%(value)s: the key %(key)s is not text",
                        value=path or "the document",
                        key=repr(key),
                    )
                    return Diagnostic("SC503", E, message, field=path or "(file)")
                stack.append((child, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            return Diagnostic(
                "SC503",
                E,
                Message("%(path)s: %(node)s is not a JSON number", path=path, node=node),
                field=path,
            )
        elif node is not None and not isinstance(node, str | int | float | bool):
            kind = type(node).__name__
            return Diagnostic(
                "SC503",
                E,
                Message("%(path)s: a %(kind)s value is not JSON data", path=path, kind=kind),
                field=path,
            )
    return None
