"""CX's own Python runs in the simulation unchanged: every tool and callback file of the corpus.

The corpus is Google's ``cxas-scrapi`` sdist (``tests/cx_corpus.py``): every CX app in it
(``examples/bella_notte``, the foundry's ``Sample_Support_Agent``, the ``skill_eval``
scenarios…) and the callback files outside an app. Nothing here knows an app: each app is
imported as a CX export, its goldens (``evaluations/*/*.json``) become scenarios (user
turns, the expected tool calls with their arguments, an answer), and one scenario per agent
calls every Python tool once, with arguments from the goldens, the tool's JSON parameter
schema or its signature. The simulation runs them through the real sandbox with the model
calls, callbacks and ``tools.<name>(...)`` calls of the runtime; a tool that only code calls
(the slot-filling engine) runs when the callbacks call it.

A file runs when at least one of its calls returned; no call of any file may fail because
the sandbox cannot run it (a refused construct, a missing CX global, a time or memory
limit). A file that cannot run is reported with the construct and the line.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from agents.core.simulate import CodeCall, CodeResult, simulate
from agents.core.spec import AppSpec, CallbackKind, CallbackSpec, ToolKind, ToolSpec
from agents.sandbox import Limits, open_session
from agents.sandbox.code_runner import sandbox_runner
from tests.cx_corpus import (
    CALLBACK_FILE,
    TOOL_FILE,
    code_files,
    corpus_apps,
    cx_corpus,  # noqa: F401 - the fixture
    cx_corpus_root,
    golden_scenario,
    goldens,
    load_app,
    tool_arguments,
    tool_owner,
    tools_scenario,
    with_every_tool,
)

# Engines of a thousand lines, compiled in every call: more room than a designer's default.
LIMITS = Limits(wall_time_s=10, cpu_time_s=10)
# Failures that say the sandbox could not run the code, rather than the code raising on the
# conversation it was given (a sample argument, a slot not filled yet).
CANNOT_RUN = ("forbidden", "syntax", "entry_not_found", "serialization", "timeout", "memory")
CANNOT_RUN_EXCEPTIONS = ("NameError", "ImportError", "ModuleNotFoundError")


def app_ids() -> list[str]:
    try:
        root = cx_corpus_root()
    except Exception:
        return ["corpus-unavailable"]
    return [folder.relative_to(root).as_posix() for folder in corpus_apps(root)]


class Recorder:
    """The sandbox runner, noting each call's file (a tool's name or a callback's code) and
    outcome, and the tools the code called through ``tools.<name>(...)``."""

    def __init__(self, session) -> None:
        self.run = sandbox_runner(session)
        self.outcomes: dict[str, list[tuple[bool, str]]] = defaultdict(list)

    def __call__(self, call: CodeCall) -> CodeResult:
        result = self.run(call)
        key = f"tool:{call.entry}" if call.kind == "tool" else f"callback:{call.code.strip()}"
        where = f" (line {result.error_line})" if result.error_line else ""
        self.outcomes[key].append((result.ok, f"{result.error}{where}"))
        for name, returned in result.tool_calls:
            self.outcomes[f"tool:{name}"].append((returned, "raised inside tools.<name>()"))
        return result


def file_key(path: Path, spec: AppSpec) -> str:
    text = path.as_posix()
    tool = TOOL_FILE.search(text)
    if tool:
        # The tool JSON names the function; the folder is its display name.
        folder = tool.group(1)
        names = [t.name for t in spec.tools if t.python_code.strip() == path.read_text().strip()]
        return f"tool:{names[0] if names else folder}"
    return f"callback:{path.read_text().strip()}"


def cannot_run(message: str) -> bool:
    kind = message.split(":", 1)[0]
    return kind in CANNOT_RUN or (
        kind == "exception" and any(f" {name}:" in message for name in CANNOT_RUN_EXCEPTIONS)
    )


def orphan_callbacks(root: Path, folder: Path, apps: list[Path]) -> list[tuple[Path, str]]:
    """Callback files outside any app whose project holds this app and no other (the
    foundry template's callback tests): run as callbacks of this app's root agent."""
    found = []
    for path in code_files(root):
        match = CALLBACK_FILE.search(path.as_posix())
        if not match or any(app in path.parents for app in apps):
            continue
        # The nearest folder above the file that holds an app is its project.
        holders = next(
            (
                [app for app in apps if p in app.parents]
                for p in path.parents
                if any(p in app.parents for app in apps)
            ),
            [],
        )
        if holders == [folder]:
            found.append((path, f"{match.group(2)}_{match.group(3)}"))
    return found


@pytest.mark.parametrize("app", app_ids())
def test_every_tool_and_callback_file_of_the_app_runs_in_the_simulation(cx_corpus, app):  # noqa: F811
    folder = cx_corpus / app
    apps = corpus_apps(cx_corpus)
    spec = load_app(folder)
    # Callback files of the app's project that sit outside the app (tests of a callback)
    # run as extra callbacks of the root agent, after its own.
    extra = orphan_callbacks(cx_corpus, folder, apps)
    if extra:
        root = next(a for a in spec.agents if a.is_root)
        added = tuple(
            CallbackSpec(CallbackKind(kind), path.read_text(), 100 + n)
            for n, (path, kind) in enumerate(extra)
        )
        spec = replace(
            spec,
            agents=tuple(
                replace(a, callbacks=a.callbacks + added) if a is root else a for a in spec.agents
            ),
        )
    files = [p for p in code_files(folder)] + [p for p, _ in extra]
    expected = {file_key(p, spec): p.relative_to(cx_corpus).as_posix() for p in files}

    runnable = with_every_tool(spec)
    scenarios = [tools_scenario(folder, spec, agent) for agent in spec.agents]
    pending = [golden_scenario(folder, spec, golden) for golden in goldens(folder)]
    with open_session(limits=LIMITS) as session:
        recorder = Recorder(session)
        ran = 0
        # The per-agent scenarios first, then goldens until every file has run.
        while scenarios or pending:
            scenario = scenarios.pop(0) if scenarios else pending.pop(0)
            simulate(runnable, scenario, run_code=recorder)
            ran += 1
            returned = {k for k, v in recorder.outcomes.items() if any(ok for ok, _ in v)}
            if not scenarios and set(expected) <= returned:
                break

    outcomes = recorder.outcomes
    never_ran = sorted(path for key, path in expected.items() if key not in outcomes)
    never_returned = sorted(
        f"{path}: {outcomes[key][0][1]}"
        for key, path in expected.items()
        if key in outcomes and not any(ok for ok, _ in outcomes[key])
    )
    refused = sorted(
        {
            f"{expected.get(key, key[:60])}: {message}"
            for key, calls in outcomes.items()
            for ok, message in calls
            if not ok and cannot_run(message)
        }
    )
    assert never_ran == [], f"never called in {ran} scenarios"
    assert never_returned == []
    assert refused == []


def test_the_corpus_has_the_files_it_is_known_for(cx_corpus):  # noqa: F811
    """The sdist's tool and callback files, counted: a new release that moves them shows."""
    files = code_files(cx_corpus)
    tools = [p for p in files if TOOL_FILE.search(p.as_posix())]
    callbacks = [p for p in files if CALLBACK_FILE.search(p.as_posix())]
    assert (len(tools), len(callbacks)) == (22, 15)
    assert len(corpus_apps(cx_corpus)) == 13


def test_a_file_that_cannot_run_names_the_construct_and_the_line(cx_corpus):  # noqa: F811
    folder = next(f for f in corpus_apps(cx_corpus) if goldens(f))
    spec = load_app(folder)
    tool = next(t for t in spec.tools if t.python_code.strip())
    lines = tool.python_code.splitlines()
    # A construct CX's runtime refuses too, on the line after the imports.
    at = next(i for i, line in enumerate(lines) if re.match(r"(def|class) ", line))
    broken = "\n".join([*lines[:at], "import subprocess", *lines[at:]])
    spec = replace(
        spec, tools=tuple(replace(t, python_code=broken) if t is tool else t for t in spec.tools)
    )
    scenario = tools_scenario(folder, spec, tool_owner(spec, tool))
    with open_session(limits=LIMITS) as session:
        result = simulate(with_every_tool(spec), scenario, run_code=sandbox_runner(session))
    messages = [d.message for d in result.diagnostics if d.code == "SC410"]
    # Run as a step, or called from other code through tools.<name>(...): the message
    # names the construct, the tool and its line.
    assert messages
    for message in messages:
        assert "import of 'subprocess'" in message
        assert (
            f"tool {tool.name} failed (line {at + 1})" in message
            or f"(in tool {tool.name}, line {at + 1})" in message
        ), message


def test_arguments_come_from_the_golden_then_the_schema_then_the_signature(tmp_path):
    code = (
        "def book(party: int, when: str, notes: str = '', vip: bool = False, *, tool_context=None):\n"
        "    return {}\n"
    )
    plain = ToolSpec("book", ToolKind.PYTHON, python_code=code)
    # The signature: required parameters only, a sample by annotation.
    assert tool_arguments(tmp_path, plain) == {"party": 1, "when": "sample"}
    # A JSON parameter schema (CX's pythonFunction.parameters) overrides it.
    schema = {"type": "object", "properties": {"party": {"type": "number"}}, "required": ["party"]}
    typed = replace(plain, cx={"pythonFunction": {"parameters": schema}})
    assert tool_arguments(tmp_path, typed) == {"party": 1.5, "when": "sample"}
    # A golden's arguments win, completed for what they leave out.
    assert tool_arguments(tmp_path, typed, {"party": 4}) == {"party": 4, "when": "sample"}
