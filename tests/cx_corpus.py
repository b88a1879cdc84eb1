"""Real CX Agent Studio code for the tests: Google's ``cxas-scrapi`` sdist, unpacked once.

``cx_corpus_root()`` downloads ``cxas-scrapi==1.10.0`` (the sdist) from PyPI with pip into ``~/.cache/statecraft/`` (or ``$STATECRAFT_CACHE``) the first time and returns
the unpacked source tree; nothing third-party is committed.  The ``cx_corpus`` fixture
skips the test, with the reason, only when the download is impossible (no network).

Reusable: ``examples/bella_notte`` holds a real app (agents, callbacks, tools) and
``src/cxas_scrapi/utils/callback_libs.py`` the objects callbacks receive.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agents.core.spec import (
    AgentSpec,
    AppSpec,
    ScenarioSpec,
    SessionSpec,
    StepKind,
    StepSpec,
    ToolKind,
    ToolSpec,
)

PACKAGE = "cxas-scrapi"
VERSION = "1.10.0"


class CorpusUnavailable(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("STATECRAFT_CACHE", Path.home() / ".cache" / "statecraft"))


def cx_corpus_root() -> Path:
    """The unpacked ``cxas_scrapi-1.10.0`` directory (downloaded and unpacked once)."""
    base = cache_dir() / "cx-corpus"
    root = base / f"cxas_scrapi-{VERSION}"
    if (root / "examples" / "bella_notte").is_dir():
        return root
    base.mkdir(parents=True, exist_ok=True)
    archive = base / f"cxas_scrapi-{VERSION}.tar.gz"
    if not archive.exists():
        # pip prepares the sdist's metadata (installing its build backend in a throwaway
        # environment): a minute or two, once per machine.
        done = subprocess.run(
            [
                sys.executable,
                *("-m", "pip", "download", "--no-deps", "--no-binary", ":all:"),
                *("-d", str(base), f"{PACKAGE}=={VERSION}"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0 or not archive.exists():
            raise CorpusUnavailable(
                f"could not download {PACKAGE}=={VERSION}: {done.stderr.strip()[-500:]}"
            )
    with tarfile.open(archive) as tar:
        tar.extractall(base, filter="data")
    return root


@pytest.fixture(scope="session")
def cx_corpus() -> Path:
    try:
        return cx_corpus_root()
    except (CorpusUnavailable, OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"the CX corpus ({PACKAGE} sdist) cannot be downloaded here: {exc}")


# --------------------------------------------------------------------------- the corpus's apps
#
# Generic readers for every CX app of the corpus: no per-app knowledge. An app is a folder
# holding app.json (or app.yaml); its goldens are evaluations/*/*.json; a tool's arguments
# come from the goldens' tool calls, else the tool's JSON parameter schema, else its Python
# signature.

TOOL_FILE = re.compile(r"(?:^|/)tools/([^/]+)/python_function/python_code\.py$")
CALLBACK_FILE = re.compile(
    r"(?:^|/)agents/([^/]+)/(before|after)_(agent|model|tool)_callbacks/[^/]+/python_code\.py$"
)
# Text a golden's user turn stands for when it has no text (an event, variables only).
PLACEHOLDER_ANSWER = "Certainly."


def corpus_apps(root: Path) -> list[Path]:
    """Every CX app folder of the corpus (the folder of an app.json or app.yaml)."""
    found = {p.parent for name in ("app.json", "app.yaml") for p in root.rglob(name)}
    return sorted(found)


def code_files(root: Path) -> list[Path]:
    """Every tool and callback file of the corpus, in or outside an app folder."""
    return sorted(
        p
        for p in root.rglob("python_code.py")
        if TOOL_FILE.search(p.as_posix()) or CALLBACK_FILE.search(p.as_posix())
    )


def load_app(folder: Path) -> AppSpec:
    from agents.core.cx.app import from_cx_files

    files = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    spec, diagnostics = from_cx_files(files)
    assert spec is not None, [d.message for d in diagnostics]
    return spec


def goldens(folder: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(folder.glob("evaluations/*/*.json")):
        data = json.loads(path.read_text())
        if isinstance(data.get("golden"), dict):
            out.append({"name": data.get("displayName") or path.stem, **data["golden"]})
    return out


def golden_turns(golden: dict[str, Any]) -> list[dict[str, Any]]:
    """Each turn as {"text", "variables", "calls": [(tool, args)], "transfer"}."""
    turns = []
    for turn in golden.get("turns") or ():
        current: dict[str, Any] = {"text": "", "variables": {}, "calls": [], "transfer": None}
        for step in turn.get("steps") or ():
            given = step.get("userInput") or {}
            if isinstance(given.get("text"), str):
                current["text"] = given["text"]
            elif isinstance(given.get("event"), dict):
                current["text"] = f"<event>{given['event'].get('event', '')}</event>"
            current["variables"].update(given.get("variables") or {})
            expected = step.get("expectation") or {}
            call = expected.get("toolCall")
            if isinstance(call, dict) and isinstance(call.get("tool"), str):
                current["calls"].append((call["tool"], dict(call.get("args") or {})))
            transfer = expected.get("agentTransfer")
            if isinstance(transfer, dict) and current["transfer"] is None:
                current["transfer"] = transfer.get("targetAgent")
        turns.append(current)
    return turns


def golden_arguments(folder: Path) -> dict[str, dict[str, Any]]:
    """The first arguments each tool is called with in the app's goldens."""
    found: dict[str, dict[str, Any]] = {}
    for golden in goldens(folder):
        for turn in golden_turns(golden):
            for tool, args in turn["calls"]:
                found.setdefault(tool, args)
    return found


_SAMPLES_BY_TYPE = {
    "str": "sample",
    "string": "sample",
    "int": 1,
    "integer": 1,
    "float": 1.5,
    "number": 1.5,
    "bool": True,
    "boolean": True,
    "dict": {},
    "object": {},
    "list": [],
    "array": [],
}


def _annotation_type(node: ast.expr | None) -> str:
    if node is None:
        return "str"
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr.lower()
    if isinstance(node, ast.Name):
        return node.id.lower()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split("[")[0].lower()
    return "str"


def schema_arguments(tool: ToolSpec) -> dict[str, Any] | None:
    """Arguments for the required parameters of the tool's JSON parameter schema, if any."""
    function = tool.cx.get("pythonFunction") if isinstance(tool.cx, dict) else None
    schema = (function or {}).get("parameters") or tool.cx.get("parameters")
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    required = schema.get("required") or list(schema["properties"])
    return {
        name: _SAMPLES_BY_TYPE.get(str(spec.get("type", "string")).lower(), "sample")
        for name, spec in schema["properties"].items()
        if name in required and isinstance(spec, dict)
    }


def signature_arguments(code: str, entry: str) -> dict[str, Any]:
    """Arguments for the parameters of `entry` that have no default, by annotation."""
    function = next(
        node
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.FunctionDef) and node.name == entry
    )
    params = function.args.args
    required = params[: len(params) - len(function.args.defaults)]
    return {
        p.arg: _SAMPLES_BY_TYPE.get(_annotation_type(p.annotation), "sample")
        for p in required
        if p.arg not in ("context", "tool_context", "callback_context")
    }


def tool_arguments(folder: Path, tool: ToolSpec, given: dict[str, Any] | None = None) -> dict:
    """`given` (a golden's arguments) or the goldens' first call of the tool, completed with
    samples for the required parameters they leave out: from the JSON parameter schema,
    else the signature."""
    args = signature_arguments(tool.python_code, tool.name) if tool.python_code else {}
    args.update(schema_arguments(tool) or {})
    args.update(given if given is not None else golden_arguments(folder).get(tool.name) or {})
    return args


def golden_scenario(folder: Path, spec: AppSpec, golden: dict[str, Any]) -> ScenarioSpec:
    """A golden as a scenario: per turn, the user's text, the expected tool calls, and an
    answer. Its agent is the transfer target, else the agent that may call most of the
    golden's tools (the root on a tie); variables given before the first message are the
    session's values."""
    turns = golden_turns(golden)
    called = [tool for turn in turns for tool, _ in turn["calls"]]
    transfer = next((t["transfer"] for t in turns if t["transfer"]), None)
    agents = sorted(spec.agents, key=lambda a: (not a.is_root, a.name))
    agent = next((a for a in agents if transfer and a.cx.get("name") == transfer), None)
    agent = agent or next((a for a in agents if a.name == transfer), None)
    if agent is None:
        agent = max(agents, key=lambda a: sum(t in a.tools for t in called))
    values: dict[str, Any] = {}
    steps: list[StepSpec] = []
    for turn in turns:
        if not steps and not turn["text"]:
            values.update(turn["variables"])
        steps.append(StepSpec(StepKind.USER, text=turn["text"] or "<event>welcome</event>"))
        for tool, args in turn["calls"]:
            known = spec.tool(tool)
            if known is not None and known.kind is ToolKind.PYTHON:
                args = tool_arguments(folder, known, args)
            steps.append(StepSpec(StepKind.TOOL, tool=tool, args=args))
        steps.append(StepSpec(StepKind.AGENT, text=PLACEHOLDER_ANSWER))
    declared = {v.name for v in spec.variables}
    return ScenarioSpec(
        name=golden["name"],
        agent=agent.name,
        steps=tuple(steps),
        session=SessionSpec(values={k: v for k, v in values.items() if k in declared}),
    )


def tool_owner(spec: AppSpec, tool: ToolSpec) -> AgentSpec:
    """The agent that calls `tool` in the harness: the first that may call it, the root
    first; the root for a tool only code calls."""
    agents = sorted(spec.agents, key=lambda a: not a.is_root)
    return next((a for a in agents if tool.name in a.tools), agents[0])


def tools_scenario(folder: Path, spec: AppSpec, agent: AgentSpec) -> ScenarioSpec:
    """Each Python tool whose owner is `agent` (`tool_owner`), once, each in a turn of its
    own; a plain exchange when it owns none (its callbacks still run)."""
    steps: list[StepSpec] = []
    for tool in spec.tools:
        if (
            tool.kind is ToolKind.PYTHON
            and tool.python_code.strip()
            and tool_owner(spec, tool).name == agent.name
        ):
            steps.append(StepSpec(StepKind.USER, text=f"Please use {tool.name}."))
            args = tool_arguments(folder, tool)
            steps.append(StepSpec(StepKind.TOOL, tool=tool.name, args=args))
            steps.append(StepSpec(StepKind.AGENT, text=PLACEHOLDER_ANSWER))
    if not steps:
        steps = [
            StepSpec(StepKind.USER, text="Hello."),
            StepSpec(StepKind.AGENT, text=PLACEHOLDER_ANSWER),
        ]
    return ScenarioSpec(name=f"every tool on {agent.name}", agent=agent.name, steps=tuple(steps))


def with_every_tool(spec: AppSpec) -> AppSpec:
    """The app with every tool attached to every agent: a golden's or the harness's tool
    step then runs on whichever agent the scenario talks to."""
    names = tuple(t.name for t in spec.tools)
    return replace(spec, agents=tuple(replace(a, tools=names) for a in spec.agents))
