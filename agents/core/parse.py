"""Tokenize agent instructions: references, conditional tags and literal text (SPEC §2).

One compiled regex finds every brace group in a single ``split`` (C speed);
each distinct group is classified once (cached), so the cost per reference is
a dictionary lookup. ``$`` is looked for in a second pass only when the text
contains one. Positions (line, column) are computed incrementally, and only
for what is reported.

The same scan feeds ``parse`` (tokens for the linter and the editor) and
``compile_instructions`` (which never builds tokens), so both always agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from itertools import accumulate
from typing import NamedTuple

from agents.core import codes
from agents.core.conditions import Condition, ConditionError, parse_condition
from agents.core.diagnostics import Diagnostic, Message, Severity

CODES: dict[str, str] = codes.section("parse")


class TokenKind(StrEnum):
    TEXT = "text"
    STATIC = "static"
    DYNAMIC = "dynamic"
    TOOL = "tool"
    AGENT = "agent"
    IF = "if"
    ELIF = "elif"
    ELSE = "else"
    ENDIF = "endif"


TAG_KINDS = frozenset({TokenKind.IF, TokenKind.ELIF, TokenKind.ELSE, TokenKind.ENDIF})


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    start: int
    end: int
    line: int
    column: int
    raw: str
    name: str = ""
    path: tuple[str, ...] = ()
    condition: Condition | None = None


@dataclass(frozen=True, slots=True)
class ParseResult:
    tokens: tuple[Token, ...]
    diagnostics: tuple[Diagnostic, ...]


# Every brace group that can mean something, as one capturing group for `split`.
# Each alternative scans up to the next brace (or `{%` / newline for tags), so
# the whole scan is linear: `{{…}}`, `{%…%}`, an unclosed `{%`, a `{{` that is
# not the start of `{{…}}` (not followed by a third `{`), and `{…}`.
# Written for the speed of `re`: `{{name}}` is tried first with a range class,
# and `[^{}]` is spelled as ranges (`re` tests a negated set of two literals
# about 20% slower); neither changes what matches.
_NOT_BRACE = r"[\x00-\x7a\x7c\x7e-\U0010ffff]"
_LEXER = re.compile(
    r"(\{(?:\{[A-Za-z0-9_.]*+\}\}"
    rf"|\{{{_NOT_BRACE}*+\}}\}}"
    r"|%(?:[^%{\n]|%(?!\})|\{(?!%))*%\}"
    r"|%"
    r"|\{(?!\{)"
    rf"|{_NOT_BRACE}*+\}}))"
)
_DOLLAR = re.compile(r"\$(?:(context)\b|(\{\{[^{}]*\}\}|\{[^{}]*\}))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*", re.ASCII)
_REFERENCE = re.compile(r"@(TOOL|AGENT):\s*(\S.*)", re.DOTALL)
_ALMOST_REFERENCE = re.compile(r"@?\s*([A-Za-z]+)\s*(:?)\s*(.*)", re.DOTALL)
# What a designer may take for a name but a reference cannot be: any letters (`prénom`,
# `名前`), or quoted text.
_LOOKS_LIKE_NAME = re.compile(r"[^\W\d]\w*(?:\.\w+)*")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'", re.DOTALL)
# HTML or quotes inside `{{…}}` (`{{"><img src=x>}}`): never a name, shown as text.
_MARKUP = re.compile(r"[<>\"']")
_TAG_KEYWORD = re.compile(r"([A-Za-z_]*:?)(.*)", re.DOTALL)
_REFERENCE_KINDS = {"TOOL": TokenKind.TOOL, "AGENT": TokenKind.AGENT}
_SNIPPET = 60


class Problem(NamedTuple):
    """A diagnostic before its position is known: code, severity, message (and the
    variable it is about, if any)."""

    code: str
    severity: Severity
    message: str
    reference: str | None = None


class Lexeme(NamedTuple):
    """What one brace group means, independent of where it is."""

    kind: TokenKind
    name: str = ""
    path: tuple[str, ...] = ()
    condition: Condition | None = None
    problem: Problem | None = None


def _snippet(raw: str) -> str:
    raw = " ".join(raw.split()) if "\n" in raw else raw
    return raw if len(raw) <= _SNIPPET else raw[: _SNIPPET - 1] + "…"


def _suggest_reference(content: str) -> str | None:
    """The right form of something that looks like a tool/agent reference, else None."""
    match = _ALMOST_REFERENCE.fullmatch(content.strip())
    if match is None:
        return None
    word, _, rest = match.groups()
    keyword = word.upper()
    if keyword not in _REFERENCE_KINDS:
        return None
    rest = rest.strip()
    placeholder = "tool_name" if keyword == "TOOL" else "Agent Name"
    return f"{{@{keyword}: {rest or placeholder}}}"


def _wrong(raw: str, suggestion: str | None, why: str = "") -> Lexeme:
    if suggestion:
        message = Message(
            "`%(snippet)s` is not a reference: write `%(suggestion)s`.",
            snippet=_snippet(raw),
            suggestion=suggestion,
        )
    else:
        message = Message(
            "`%(snippet)s` is not a reference%(why)s.", snippet=_snippet(raw), why=why
        )
    return Lexeme(TokenKind.TEXT, problem=Problem("SC101", Severity.WARNING, message))


def _classify_braces(raw: str) -> Lexeme:
    """`{{…}}` or `{…}`."""
    if raw.startswith("{{"):
        content = raw[2:-2].strip()
        if _PATH.fullmatch(content):
            return Lexeme(TokenKind.STATIC, content, tuple(content.split(".")))
        if content.startswith("@"):
            return _wrong(
                raw, _suggest_reference(content) or None, Message(": `@` references use one brace")
            )
        suggestion = _suggest_reference(content) if ":" in content else None
        if suggestion:
            return _wrong(raw, suggestion)
        if _LOOKS_LIKE_NAME.fullmatch(content):
            why = Message("a variable name uses only ASCII letters, digits and `_`")
        elif _QUOTED.fullmatch(content):
            why = Message("quoted text is not a variable name")
        elif _MARKUP.search(content):
            why = Message("markup and quotes are not a variable name")
        else:
            return Lexeme(TokenKind.TEXT)
        message = Message(
            "`%(snippet)s` is not a reference (%(why)s); it stays as written.",
            snippet=_snippet(raw),
            why=why,
        )
        return Lexeme(TokenKind.TEXT, problem=Problem("SC104", Severity.WARNING, message))
    content = raw[1:-1].strip()
    if _NAME.fullmatch(content):
        return Lexeme(TokenKind.DYNAMIC, content, (content,))
    if content.startswith("@"):
        match = _REFERENCE.fullmatch(content)
        if match and "\n" not in match.group(2):
            return Lexeme(_REFERENCE_KINDS[match.group(1)], match.group(2).strip())
        suggestion = _suggest_reference(content)
        if suggestion:
            return _wrong(raw, suggestion)
        return _wrong(
            raw,
            None,
            Message(": only `{@TOOL: tool_name}` and `{@AGENT: Agent Name}` start with `@`"),
        )
    head = content.split(":", 1)[0].strip().upper() if ":" in content else ""
    if head in _REFERENCE_KINDS:
        return _wrong(raw, _suggest_reference(content))
    if raw[1:-1] == content and not content.isascii() and _LOOKS_LIKE_NAME.fullmatch(content):
        # `{prénom}`, `{名前}`: meant as a variable, but the runtime reads it as text (an
        # ASCII `{a.b}` or a spaced `{ prénom }` is prose, and stays quiet).
        message = Message(
            "`%(snippet)s` is not a reference (%(why)s); it stays as written.",
            snippet=_snippet(raw),
            why=Message("a variable name uses only ASCII letters, digits and `_`"),
        )
        return Lexeme(TokenKind.TEXT, problem=Problem("SC104", Severity.WARNING, message))
    return Lexeme(TokenKind.TEXT)


def _classify_tag(raw: str) -> Lexeme:
    body = raw[2:-2]
    body = body.removeprefix("-").removesuffix("-").strip()
    match = _TAG_KEYWORD.match(body)
    keyword, rest = match.group(1), match.group(2).strip()
    shown = _snippet(raw)
    if keyword in ("if", "elif"):
        kind = TokenKind.IF if keyword == "if" else TokenKind.ELIF
        if not rest:
            message = Message(
                '`%(shown)s` needs a condition, e.g. `{%% %(keyword)s channel == "web" %%}`.',
                shown=shown,
                keyword=keyword,
            )
            return Lexeme(kind, problem=Problem("SC115", Severity.ERROR, message))
        parsed = parse_condition(rest)
        if isinstance(parsed, ConditionError):
            message = Message(
                "The condition of `%(shown)s` cannot be read: %(message)s.",
                shown=shown,
                message=parsed.message,
            )
            return Lexeme(kind, problem=Problem("SC115", Severity.ERROR, message))
        return Lexeme(kind, condition=parsed)
    if keyword in ("else", "endif"):
        kind = TokenKind.ELSE if keyword == "else" else TokenKind.ENDIF
        if rest:
            hint = " (for another condition, use `{% elif … %}`)" if keyword == "else" else ""
            message = Message(
                "`%(shown)s`: `%(keyword)s` takes nothing after it%(hint)s.",
                shown=shown,
                keyword=keyword,
                hint=hint,
            )
            return Lexeme(kind, problem=Problem("SC110", Severity.ERROR, message))
        return Lexeme(kind)
    if keyword in ("elseif", "elsif", "elif:") or body.startswith("else if"):
        message = Message("`%(shown)s` is not a tag: write `{%% elif condition %%}`.", shown=shown)
    elif keyword in ("end", "fi", "endif:", "end_if") or body == "end if":
        message = Message("`%(shown)s` is not a tag: write `{%% endif %%}`.", shown=shown)
    elif not body:
        message = Message(
            "An empty `{%% %%}` tag: use `{%% if … %%}`, `{%% elif … "
            "%%}`, `{%% else %%}` or `{%% endif %%}`."
        )
    else:
        message = Message(
            "`%(shown)s` is not a known tag: only `if`, `elif`, `else` and `endif` exist.",
            shown=shown,
        )
    return Lexeme(TokenKind.TEXT, problem=Problem("SC110", Severity.ERROR, message))


_UNCLOSED_STATIC = Lexeme(
    TokenKind.TEXT,
    problem=Problem(
        "SC102",
        Severity.WARNING,
        Message("`{{` is not closed by `}}`, so it stays as text: write `{{name}}`."),
    ),
)
_UNCLOSED_TAG = Lexeme(
    TokenKind.TEXT,
    problem=Problem(
        "SC116",
        Severity.ERROR,
        Message(
            "`{%%` is not closed by `%%}` on the same line: write `{%% if "
            "… %%}`, or `{ %%` for text."
        ),
    ),
)


# Classification cache, shared by all calls: brace groups repeat a lot, within
# a text and across compilations. It only grows (up to a bound, then new groups
# are classified every time), so readers in other threads never see it shrink;
# a group is put in the sets before the dict, so a cached group is complete.
_CACHE_LIMIT = 65536
_CACHEABLE_LENGTH = 256
_LEXEMES: dict[str, Lexeme] = {}
_STATIC_RAWS: set[str] = set()
_NESTED_RAWS: set[str] = set()  # static references with a path (`{{a.b}}`)
_STATIC_ROOTS: dict[str, str] = {}  # static reference -> its variable name
_TAG_RAWS: set[str] = set()
_FLAGGED_RAWS: set[str] = set()
# Cached groups that are no tag, have no problem and no path: the usual case,
# recognised for a whole text with one subset test.
_ORDINARY_RAWS: set[str] = set()


def classify(raw: str) -> Lexeme:
    """What a brace group found by the lexer means."""
    lexeme = _LEXEMES.get(raw)
    if lexeme is None:
        lexeme = _classify(raw)
        if len(raw) <= _CACHEABLE_LENGTH and len(_LEXEMES) < _CACHE_LIMIT:
            if lexeme.kind is TokenKind.STATIC:
                _STATIC_ROOTS[raw] = lexeme.path[0]
                if len(lexeme.path) > 1:
                    _NESTED_RAWS.add(raw)
                _STATIC_RAWS.add(raw)
            elif lexeme.kind in TAG_KINDS:
                _TAG_RAWS.add(raw)
            if lexeme.problem is not None:
                _FLAGGED_RAWS.add(raw)
            elif lexeme.kind not in TAG_KINDS and len(lexeme.path) < 2:
                _ORDINARY_RAWS.add(raw)
            _LEXEMES[raw] = lexeme
    return lexeme


def _classify(raw: str) -> Lexeme:
    if raw == "{{":
        return _UNCLOSED_STATIC
    if raw == "{%":
        return _UNCLOSED_TAG
    if raw.startswith("{%"):
        return _classify_tag(raw)
    return _classify_braces(raw)


def _classify_dollar(group: str) -> Problem | None:
    """A warning for `${…}`, with the form the designer probably meant."""
    lexeme = classify(group)
    content = group.strip("{}").strip()
    if lexeme.kind in (TokenKind.STATIC, TokenKind.DYNAMIC, TokenKind.TOOL, TokenKind.AGENT):
        suggestion = group
    elif lexeme.problem is not None and lexeme.problem.code == "SC101":
        suggestion = _suggest_reference(content.lstrip("@"))
        if suggestion is None:
            return Problem("SC101", Severity.WARNING, lexeme.problem.message)
    elif _PATH.fullmatch(content):
        suggestion = f"{{{{{content}}}}}"
    else:
        return None
    shown = _snippet("$" + group)
    message = Message(
        "`%(shown)s` is not a reference: write `%(suggestion)s` (without `$`).",
        shown=shown,
        suggestion=suggestion,
    )
    return Problem("SC101", Severity.WARNING, message)


_CONTEXT = Problem(
    "SC103",
    Severity.ERROR,
    Message(
        "`$context` cannot be used in instructions: built-in session "
        "values are only for tools. Reference a variable instead, "
        "e.g. `{{name}}` or `{name}`."
    ),
)


def positions(text: str, offsets: list[int]) -> dict[int, tuple[int, int]]:
    """1-based (line, column) of each offset, in one forward pass over the text."""
    found: dict[int, tuple[int, int]] = {}
    line, line_start, previous = 1, 0, 0
    for offset in sorted(set(offsets)):
        newlines = text.count("\n", previous, offset)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", previous, offset) + 1
        found[offset] = (line, offset - line_start + 1)
        previous = offset
    return found


class Scan:
    """The lexed text: `parts` alternates text and brace groups (``split`` output).

    Token *k* is ``parts[2k + 1]``; ``kinds`` holds the kinds whose structure
    made them differ from the lexeme (a stray ``{% endif %}`` is text), and
    ``problems`` the diagnostics as (start, end, Problem).
    """

    __slots__ = (
        "_ends",
        "distinct",
        "has_tags",
        "kinds",
        "lexemes",
        "nested",
        "parts",
        "problems",
        "raws",
        "static_roots",
        "statics",
        "text",
    )

    def __init__(self, text: str) -> None:
        self.text = text
        self.parts: list[str] = _LEXER.split(text)
        self.raws: list[str] = self.parts[1::2]
        self.kinds: dict[int, TokenKind] = {}
        self.problems: list[tuple[int, int, Problem]] = []
        self._ends: list[int] | None = None
        self.distinct = distinct = set(self.raws)
        self.lexemes: dict[str, Lexeme]
        self.statics: set[str]  # the distinct static references
        self.static_roots: dict[str, str]  # static reference -> variable name
        self.nested: set[str]  # static references with a path
        self.has_tags = False
        flagged: set[str] = set()
        if distinct <= _ORDINARY_RAWS:
            self.lexemes = _LEXEMES
            self.statics = distinct & _STATIC_RAWS
            self.static_roots = _STATIC_ROOTS
            self.nested = set()
            if "$" in text:
                self._check_dollars()
            return
        for raw in distinct.difference(_LEXEMES):
            classify(raw)
        if distinct.difference(_LEXEMES):
            # Some groups are too long or the cache is full: classify them here.
            self.lexemes = {raw: classify(raw) for raw in distinct}
            items = self.lexemes.items()
            self.statics = {raw for raw, lexeme in items if lexeme.kind is TokenKind.STATIC}
            self.static_roots = {raw: self.lexemes[raw].path[0] for raw in self.statics}
            self.nested = {raw for raw in self.statics if len(self.lexemes[raw].path) > 1}
            flagged = {raw for raw, lexeme in items if lexeme.problem is not None}
            self.has_tags = any(lexeme.kind in TAG_KINDS for _, lexeme in items)
        else:
            self.lexemes = _LEXEMES
            self.statics = distinct & _STATIC_RAWS
            self.static_roots = _STATIC_ROOTS
            self.nested = distinct & _NESTED_RAWS if _NESTED_RAWS else set()
            flagged = distinct & _FLAGGED_RAWS
            self.has_tags = not _TAG_RAWS.isdisjoint(distinct)
        if self.has_tags:
            self._check_structure(flagged)
        elif flagged:
            ends = self.ends
            for position, raw in enumerate(self.raws):
                if raw in flagged:
                    problem = self.lexemes[raw].problem
                    assert problem is not None
                    index = 2 * position + 1
                    self.problems.append((ends[index - 1], ends[index], problem))
        if "$" in text:
            self._check_dollars()

    @property
    def ends(self) -> list[int]:
        """``ends[i]`` is the offset just after ``parts[i]`` (so part i starts at ``ends[i-1]``)."""
        if self._ends is None:
            self._ends = list(accumulate(map(len, self.parts)))
        return self._ends

    def kind(self, index: int) -> TokenKind:
        """The kind of the brace group ``parts[index]`` (index odd), structure included."""
        kind = self.kinds.get(index)
        return kind if kind is not None else self.lexemes[self.parts[index]].kind

    def _check_structure(self, flagged: set[str]) -> None:
        ends, parts, lexemes, problems = self.ends, self.parts, self.lexemes, self.problems
        stack: list[list[int]] = []  # [index of the if, index of its else or 0]
        for index in range(1, len(parts), 2):
            raw = parts[index]
            lexeme = lexemes[raw]
            if raw in flagged:
                assert lexeme.problem is not None
                problems.append((ends[index - 1], ends[index], lexeme.problem))
            kind = lexeme.kind
            if kind not in TAG_KINDS:
                continue
            problem: Problem | None = None
            shown = _snippet(raw)
            if kind is TokenKind.IF:
                stack.append([index, 0])
            elif not stack:
                if kind is TokenKind.ENDIF:
                    problem = Problem(
                        "SC112",
                        Severity.ERROR,
                        Message(
                            "`%(shown)s` closes nothing: there is no open `{%% if %%}` before it.",
                            shown=shown,
                        ),
                    )
                else:
                    problem = Problem(
                        "SC113",
                        Severity.ERROR,
                        Message(
                            "`%(shown)s` is outside any `{%% if %%}` … `{%% endif %%}` block.",
                            shown=shown,
                        ),
                    )
            elif kind is TokenKind.ENDIF:
                stack.pop()
            elif stack[-1][1]:
                problem = Problem(
                    "SC114",
                    Severity.ERROR,
                    Message(
                        "`%(shown)s` comes after `{%% else %%}` in the same block: "
                        "`{%% else %%}` must be the last branch.",
                        shown=shown,
                    ),
                )
            elif kind is TokenKind.ELSE:
                stack[-1][1] = index
            if problem is not None:
                self.kinds[index] = TokenKind.TEXT
                problems.append((ends[index - 1], ends[index], problem))
        for index, _ in stack:
            problem = Problem(
                "SC111",
                Severity.ERROR,
                Message(
                    "`%(snippet)s` is never closed: add `{%% endif %%}` (until "
                    "then the block runs to the end of the instructions).",
                    snippet=_snippet(parts[index]),
                ),
            )
            problems.append((ends[index - 1], ends[index], problem))

    def _check_dollars(self) -> None:
        duplicates: set[int] = set()
        for match in _DOLLAR.finditer(self.text):
            start, end = match.span()
            if match.group(1):
                self.problems.append((start, end, _CONTEXT))
                continue
            problem = _classify_dollar(match.group(2))
            if problem is not None:
                self.problems.append((start, end, problem))
                duplicates.add(start + 1)
        if duplicates:
            self.problems = [
                item
                for item in self.problems
                if not (item[0] in duplicates and item[2].code == "SC101")
            ]

    def diagnostics(
        self, extra: list[tuple[int, int, Problem]] | None = None
    ) -> tuple[Diagnostic, ...]:
        """All problems as diagnostics, in text order."""
        problems = self.problems + extra if extra else self.problems
        if not problems:
            return ()
        problems.sort(key=lambda item: item[0])
        where = positions(self.text, [start for start, _, _ in problems])
        return tuple(
            Diagnostic(
                code=problem.code,
                severity=problem.severity,
                message=problem.message,
                line=where[start][0],
                column=where[start][1],
                start=start,
                end=end,
                reference=problem.reference,
            )
            for start, end, problem in problems
        )


@lru_cache(maxsize=8)
def scanned(text: str) -> Scan:
    """The `Scan` of `text`, kept for the last few texts: lint and the usage analysis
    (``agents.core.usage``) read the same instructions in one request, and a long text's
    scan is most of their cost. Callers only read it."""
    return Scan(text)


def parse(text: str) -> ParseResult:
    """Tokens covering `text` end to end (adjacent text merged) and syntax diagnostics.

    Never raises. A group that is not a reference (``{"a": 1}``, ``{ not a name }``)
    or a tag the structure rejects (a stray ``{% endif %}``) is a TEXT token.
    """
    if not isinstance(text, str):
        text = str(text)
    scan = Scan(text)
    parts = scan.parts
    lexemes = scan.lexemes
    tokens: list[Token] = []
    line, line_start = 1, 0
    offset = 0
    text_start = 0  # start of the pending run of text
    text_line, text_column = 1, 1
    for index, part in enumerate(parts):
        end = offset + len(part)
        kind = TokenKind.TEXT if index % 2 == 0 else scan.kind(index)
        if kind is not TokenKind.TEXT:
            if text_start < offset:
                tokens.append(
                    Token(
                        TokenKind.TEXT,
                        text_start,
                        offset,
                        text_line,
                        text_column,
                        text[text_start:offset],
                    )
                )
            lexeme = lexemes[part]
            tokens.append(
                Token(
                    kind,
                    offset,
                    end,
                    line,
                    offset - line_start + 1,
                    part,
                    lexeme.name,
                    lexeme.path,
                    lexeme.condition,
                )
            )
            text_start = end
        newlines = part.count("\n")
        if newlines:
            line += newlines
            line_start = offset + part.rfind("\n") + 1
        if kind is not TokenKind.TEXT:
            text_line, text_column = line, end - line_start + 1
        offset = end
    if text_start < offset:
        tokens.append(
            Token(TokenKind.TEXT, text_start, offset, text_line, text_column, text[text_start:])
        )
    return ParseResult(tokens=tuple(tokens), diagnostics=scan.diagnostics())
