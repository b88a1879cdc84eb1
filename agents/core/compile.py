"""Compile instructions into the prompt the model receives (SPEC §2).

``compile_instructions`` substitutes static references ``{{a.b}}`` with their
rendered values, keeps dynamic ``{name}``, ``{@TOOL: …}`` and ``{@AGENT: …}``
references exactly as written, keeps only the chosen branch of each
``{% if %}`` block, and leaves every other brace group as literal text. It is a
single pass: an inserted value is never scanned again. It never raises.

Lines that hold only tags vanish. A line whose only content is one or more
``{% … %}`` tags (and spaces or tabs) is removed entirely, newline included —
what Jinja's ``trim_blocks`` + ``lstrip_blocks`` do for a tag alone on its
line, which is how designers lay out blocks::

    Hello.
    {% if channel == "telephony" %}
    Speak slowly.
    {% endif %}
    Bye.

compiles on the web channel to ``"Hello.\\nBye.\\n"``. Unlike Jinja, a tag that
shares its line with text (``Hi{% if vip %} dear{% endif %}!``) removes only
itself, never the newline after it, so inline conditions cannot glue two lines
together.

Diagnostics: the syntax diagnostics of ``parse`` (same codes, same order),
plus SC120/SC121 for a static reference without a value or with a path that
does not exist — reported only where the reference is in the output (a
reference in a branch that was not chosen is not used). A condition that
reads a variable without a value sees ``None``, with an SC122 note (on the tags
that are evaluated). An ``{% if %}`` whose
condition cannot be read is false; an ``{% if %}`` never closed runs to the end
of the text; a stray ``{% endif %}``/``{% else %}`` stays as literal text.

Spans give, in the *output* text, each substituted value (``static``), each
reference kept as written (``dynamic``, ``tool``, ``agent``) and each static
reference left unresolved (``missing``), for the preview to highlight. They
are built the first time ``.spans`` is read, so compiling for the model pays
nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import accumulate
from operator import itemgetter
from typing import Any

from agents.core.conditions import resolve_path
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.parse import Lexeme, Problem, Scan, TokenKind, _snippet
from agents.core.render import render_value

_SPAN_KINDS = {
    TokenKind.STATIC: "static",
    TokenKind.DYNAMIC: "dynamic",
    TokenKind.TOOL: "tool",
    TokenKind.AGENT: "agent",
}


@dataclass(frozen=True, slots=True)
class Span:
    """``text[start:end]`` of the compiled output is a value or reference of `kind`.

    kind: ``static`` (a substituted value), ``missing`` (an unresolved ``{{…}}``
    kept as written), ``dynamic``, ``tool`` or ``agent``; name: the variable
    path, tool name or agent display name.
    """

    start: int
    end: int
    kind: str
    name: str


# Rendered floats (float repr is slow); keys are only ever floats, and equal
# floats render alike (-0.0 renders as 0), so a hit is always right.
_FLOAT_TEXT: dict[float, str] = {}
_FLOAT_TEXT_LIMIT = 4096

# (index in pieces, kind, name) of each piece that becomes a span.
Marks = list[tuple[int, str, str]]


class CompileResult:
    """The compiled prompt (`text`), its `diagnostics`, and highlight `spans`."""

    __slots__ = ("_marks", "_pieces", "_spans", "diagnostics", "text")

    def __init__(
        self,
        text: str,
        diagnostics: tuple[Diagnostic, ...],
        pieces: list[str],
        marks: Callable[[], Marks],
    ) -> None:
        self.text = text
        self.diagnostics = diagnostics
        self._pieces = pieces
        self._marks: Callable[[], Marks] | None = marks
        self._spans: tuple[Span, ...] | None = None

    @property
    def spans(self) -> tuple[Span, ...]:
        if self._spans is None:
            ends = list(accumulate(map(len, self._pieces), initial=0))
            marks = self._marks() if self._marks is not None else []
            self._spans = tuple(
                Span(ends[index], ends[index + 1], kind, name) for index, kind, name in marks
            )
            self._marks = None
            self._pieces = []
        return self._spans

    def __repr__(self) -> str:
        return f"CompileResult(text={self.text!r}, diagnostics={self.diagnostics!r})"


def _missing_problem(raw: str, lexeme: Lexeme, values: Mapping[str, Any]) -> Problem:
    root = lexeme.path[0]
    if len(lexeme.path) == 1 or values.get(root) is None:
        message = Message(
            "`%(snippet)s`: the variable `%(root)s` has no value (none "
            "set and no default), so the reference stays as written.",
            snippet=_snippet(raw),
            root=root,
        )
        return Problem("SC120", Severity.WARNING, message)
    message = Message(
        "`%(snippet)s`: `%(root)s` has no `%(path)s`, so the reference stays as written.",
        snippet=_snippet(raw),
        root=root,
        path=".".join(lexeme.path[1:]),
    )
    return Problem("SC121", Severity.WARNING, message)


def _valueless_condition(
    index: int, ends: list[int], lexeme: Lexeme, values: Mapping[str, Any]
) -> list[tuple[int, int, Problem]]:
    """An SC122 note per variable the tag's condition reads that has no value."""
    condition = lexeme.condition
    if condition is None:
        return []
    found: list[tuple[int, int, Problem]] = []
    seen: set[str] = set()
    for path in condition.references:
        root = path[0] if path else ""
        if not root or root in seen or values.get(root) is not None:
            continue
        seen.add(root)
        message = (
            f"The condition reads `{root}`, which has no value (none set and no default): "
            f"it sees none, so it is false unless it tests for that. Set `{root}` in the "
            "session values or give the variable a default."
        )
        found.append((ends[index], ends[index + 1], Problem("SC122", Severity.INFO, message, root)))
    return found


def _resolve_statics(
    scan: Scan, values: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, Problem]]:
    """Rendered value of each distinct static reference, or why it has none.

    Written for speed: lookups are C-level maps, Python only renders non-text.
    """
    statics = scan.statics
    if not statics:
        return {}, {}
    # A set iterates in the same order twice when it is not changed in between.
    rendered: dict[str, Any] = dict(
        zip(statics, map(values.get, map(scan.static_roots.__getitem__, statics)), strict=True)
    )
    for raw in scan.nested:
        rendered[raw] = resolve_path(values, scan.lexemes[raw].path)
    missing: dict[str, Problem] = {}
    for raw, value in rendered.items():
        kind = value.__class__
        if kind is str:
            continue
        if value is None:
            missing[raw] = _missing_problem(raw, scan.lexemes[raw], values)
        elif kind is int:
            rendered[raw] = int.__repr__(value)
        elif kind is float:
            text = _FLOAT_TEXT.get(value)
            if text is None:
                text = render_value(value)
                if len(_FLOAT_TEXT) < _FLOAT_TEXT_LIMIT and value - value == 0:  # finite
                    _FLOAT_TEXT[value] = text
            rendered[raw] = text
        else:
            rendered[raw] = render_value(value)
    for raw in missing:
        del rendered[raw]
    return rendered, missing


def _flat_marks(scan: Scan, missing: dict[str, Problem]) -> Callable[[], Marks]:
    def marks() -> Marks:
        found: Marks = []
        lexemes = scan.lexemes
        for position, raw in enumerate(scan.raws):
            lexeme = lexemes[raw]
            kind = _SPAN_KINDS.get(lexeme.kind)
            if kind is not None:
                found.append((2 * position + 1, "missing" if raw in missing else kind, lexeme.name))
        return found

    return marks


def _compile_flat(scan: Scan, values: Mapping[str, Any]) -> CompileResult:
    """No tags: every group is in the output, so substitution is one C-level lookup."""
    parts, raws = scan.parts, scan.raws
    rendered, missing = _resolve_statics(scan, values)
    extra: list[tuple[int, int, Problem]] = []
    if missing:
        ends = scan.ends  # source offsets: computed before parts change
        for position, raw in enumerate(raws):
            problem = missing.get(raw)
            if problem is not None:
                extra.append((ends[2 * position], ends[2 * position + 1], problem))
    if rendered:
        output = rendered  # every other group is output as written
        kept = scan.distinct - scan.statics
        if missing:
            kept.update(missing)
        output.update(zip(kept, kept, strict=True))
        # `parts` becomes the output pieces; `raws` keeps the groups as written.
        parts[1::2] = itemgetter(*raws)(output) if len(raws) > 1 else [output[raws[0]]]
        text = "".join(parts)
    else:
        text = scan.text
    return CompileResult(text, scan.diagnostics(extra), parts, _flat_marks(scan, missing))


def _standalone_tags(scan: Scan) -> set[int]:
    """Indices (in parts) of tags on a line that holds only tags and spaces/tabs."""
    parts = scan.parts
    last = len(parts) - 2
    tags = [index for index in range(1, len(parts), 2) if scan.kind(index) in _TAGS]
    is_tag = set(tags)
    left_ok: set[int] = set()
    for index in tags:
        before = parts[index - 1]
        newline = before.rfind("\n")
        if newline >= 0:
            ok = not before[newline + 1 :].strip(" \t")
        else:
            ok = not before.strip(" \t") and (
                index == 1 or (index - 2 in is_tag and index - 2 in left_ok)
            )
        if ok:
            left_ok.add(index)
    standalone: set[int] = set()
    right_ok: set[int] = set()
    for index in reversed(tags):
        after = parts[index + 1].lstrip(" \t")
        if after.startswith(("\n", "\r\n")):
            ok = True
        elif not after:
            ok = index == last or (index + 2 in is_tag and index + 2 in right_ok)
        else:
            ok = False
        if ok:
            right_ok.add(index)
            if index in left_ok:
                standalone.add(index)
    return standalone


def _trimmed_text(parts: list[str], index: int, standalone: set[int]) -> str:
    """Text part `index` without the whitespace and newline of standalone tag lines."""
    part = parts[index]
    if not part or (index - 1 not in standalone and index + 1 not in standalone):
        return part
    low, high = 0, len(part)
    if index - 1 in standalone:
        newline = part.find("\n")
        low = newline + 1 if newline >= 0 else high
    if index + 1 in standalone:
        newline = part.rfind("\n")
        high = newline + 1 if newline >= 0 else 0
    return part[low:high] if low < high else ""


_TAGS = frozenset({TokenKind.IF, TokenKind.ELIF, TokenKind.ELSE, TokenKind.ENDIF})


def _compile_blocks(
    scan: Scan, values: Mapping[str, Any], channel: str, modality: str
) -> CompileResult:
    """With tags: walk the groups, keeping the output of the chosen branches only."""
    parts, lexemes, ends = scan.parts, scan.lexemes, scan.ends
    rendered, missing = _resolve_statics(scan, values)
    standalone = _standalone_tags(scan)
    pieces: list[str] = []
    marks: Marks = []
    extra: list[tuple[int, int, Problem]] = []
    active = True
    # Per open block: [active before it, a branch was already taken].
    stack: list[list[bool]] = []
    for index in range(0, len(parts) - 1, 2):
        if active:
            part = _trimmed_text(parts, index, standalone)
            if part:
                pieces.append(part)
        raw = parts[index + 1]
        lexeme = lexemes[raw]
        kind = scan.kind(index + 1)
        if kind in _TAGS:
            condition = lexeme.condition
            if (kind is TokenKind.IF and active) or (
                kind is TokenKind.ELIF and stack and stack[-1][0] and not stack[-1][1]
            ):  # a condition that is evaluated
                extra.extend(_valueless_condition(index, ends, lexeme, values))
            if kind is TokenKind.IF:
                chosen = (
                    active
                    and condition is not None
                    and condition.evaluate(values, channel, modality)
                )
                stack.append([active, chosen])
                active = chosen
            elif kind is TokenKind.ENDIF:
                active = stack.pop()[0]
            else:
                outer, taken = stack[-1]
                if kind is TokenKind.ELSE:
                    chosen = outer and not taken
                else:
                    chosen = (
                        outer
                        and not taken
                        and condition is not None
                        and condition.evaluate(values, channel, modality)
                    )
                stack[-1][1] = taken or chosen
                active = chosen
            continue
        if not active:
            continue
        span_kind = _SPAN_KINDS.get(kind)
        if span_kind is None:
            pieces.append(raw)
            continue
        if kind is TokenKind.STATIC:
            value = rendered.get(raw)
            if value is None:
                problem = missing[raw]
                extra.append((ends[index], ends[index + 1], problem))
                span_kind, value = "missing", raw
            marks.append((len(pieces), span_kind, lexeme.name))
            pieces.append(value)
        else:
            marks.append((len(pieces), span_kind, lexeme.name))
            pieces.append(raw)
    if active:
        part = _trimmed_text(parts, len(parts) - 1, standalone)
        if part:
            pieces.append(part)
    return CompileResult("".join(pieces), scan.diagnostics(extra), pieces, lambda: marks)


def compile_instructions(
    text: str,
    values: Mapping[str, Any] | None,
    *,
    channel: str = "web",
    modality: str = "text",
) -> CompileResult:
    """The prompt for `values` (variable name -> typed value; absent or None = no value).

    See the module docstring for the rules. Never raises on any text.
    """
    if not isinstance(text, str):
        text = str(text)
    if values is None or not isinstance(values, Mapping):
        values = {}
    scan = Scan(text)
    if scan.has_tags:
        return _compile_blocks(scan, values, channel, modality)
    return _compile_flat(scan, values)
