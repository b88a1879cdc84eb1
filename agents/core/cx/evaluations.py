"""CX Agent Studio evaluations ↔ Statecraft scenarios (goldens with expectations).

A CX export holds each evaluation at ``evaluations/<name>/<name>.json``
(``google.cloud.ces_v1beta.types.Evaluation``). A *golden* evaluation
(``golden.turns[].steps[]`` of ``userInput`` / ``agentTransfer`` / ``expectation``) becomes a
scenario whose steps are the script's (``agents.core.script``):

==========================================  ============================================
CX golden step                              scenario step
==========================================  ============================================
``userInput.text`` / ``.variables`` /       one ``user:`` input (with ``variables:`` and
``.event`` (those of one turn together)     ``event:``); every golden turn starts one
``expectation.toolCall``                    ``expect call: Tool {args}`` (no ``args``: the
                                            model chooses them, ``expect call: Tool``)
``expectation.toolResponse``                ``expect response: Tool {...}``
``expectation.updatedVariables``            ``expect state: {...}``
``expectation.noToolCalls``                 ``expect no calls``
``expectation.agentTransfer``, step         ``expect transfer: Agent``
``agentTransfer``
``expectation.agentResponse``               ``expect agent: text``
``expectation.mockToolResponse``            ``mock: Tool {...}``
``expectation.note``                        the expectation's note ``[...]``
==========================================  ============================================

Every turn ends with the model's reply, as in CX: an imported turn without an
``agentResponse`` expectation gets an empty ``agent:`` step (its model callbacks run; the
text is not checked), which export leaves out again. Export writes the reverse; a ``tool:``
step is the scripted model's call, so it becomes a ``toolCall`` expectation; an ``agent:``
step with text and a ``callback:`` step have no CX form and are reported. An imported
golden keeps its original JSON (the scenario's ``cx``): exported unchanged it is written
back as it was; changed, the original with its ``golden`` replaced. Evaluations of the
*scenario* kind (a simulated user with a task and rubrics) need a model: they are not
converted (the import keeps them verbatim and lists them).

The evaluation's ``createTime``, when it has one, is the scenario's session clock
(``session.now``): its tools then compare dates with the day the golden was written.

The scenario starts at the app's root agent, as CX starts every conversation (the import
says so in one note); a sub-agent's tools are called after a transfer to it.
"""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from agents.core import rules
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.simulate import valid_now
from agents.core.spec import (
    AppSpec,
    ExpectationSpec,
    ExpectKind,
    ScenarioSpec,
    SessionSpec,
    StepKind,
    StepSpec,
)

__all__ = [
    "evaluation_to_scenario",
    "export_problems",
    "folder_of",
    "needs_model_evaluations",
    "scenario_kind_message",
    "scenario_to_evaluation",
]

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
_FOLDER_RE = re.compile(r"[^A-Za-z0-9_-]+")


def _note(code: str, severity: Severity, file: str, where: str, message: str) -> Diagnostic:
    if where:
        words = Message("%(file)s: %(where)s: %(message)s", file=file, where=where, message=message)
    else:
        words = Message("%(file)s: %(message)s", file=file, message=message)
    return Diagnostic(code, severity, words, field=where or None, subject=file)


def folder_of(scenario: ScenarioSpec) -> str:
    """The folder an exported scenario goes to: the imported one's, else from its name."""
    folder = scenario.cx.get("folder") if isinstance(scenario.cx, Mapping) else None
    if isinstance(folder, str) and folder:
        return folder
    return _folder(scenario.name) or "evaluation"


def _folder(name: str) -> str:
    """`name` as a CX folder: accents dropped (``Réservation simple`` →
    ``Reservation_simple``, as the agents' folders, `layout.folder_name`), then what a folder
    cannot hold becomes ``_``; a name with no Latin letter keeps its ``_``s."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return _FOLDER_RE.sub("_", plain).strip() if plain.strip() else _FOLDER_RE.sub("_", name)


# ---------------------------------------------------------------- export


def _struct(value: Any) -> dict[str, Any]:
    """A value as a protobuf Struct (a JSON object): a non-object is ``{"result": value}``."""
    return copy.deepcopy(value) if isinstance(value, dict) else {"result": copy.deepcopy(value)}


def _agent_ref(name: str) -> str:
    """How a CX export names an agent: its folder (the display name, sanitised)."""
    return _folder(name)


def _expectation_json(app: AppSpec, expectation: ExpectationSpec) -> dict[str, Any]:
    kind = expectation.kind
    out: dict[str, Any] = {}
    if expectation.note:
        out["note"] = expectation.note
    if kind is ExpectKind.STATE:
        out["updatedVariables"] = copy.deepcopy(expectation.value or {})
    elif kind is ExpectKind.CALL:
        call: dict[str, Any] = {"tool": expectation.tool}
        if expectation.value is not None:
            call["args"] = copy.deepcopy(expectation.value)
        out["toolCall"] = call
    elif kind is ExpectKind.RESPONSE:
        out["toolResponse"] = {"tool": expectation.tool, "response": _struct(expectation.value)}
    elif kind is ExpectKind.MOCK:
        out["mockToolResponse"] = {
            "tool": expectation.tool,
            "response": _struct(expectation.value),
        }
    elif kind is ExpectKind.NO_CALLS:
        out["noToolCalls"] = True
    elif kind is ExpectKind.TRANSFER:
        out["agentTransfer"] = {"targetAgent": _agent_ref(expectation.agent)}
    elif kind is ExpectKind.AGENT:
        out["agentResponse"] = {"role": "agent", "chunks": [{"text": str(expectation.value)}]}
    return out


def _golden(app: AppSpec, scenario: ScenarioSpec) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    for step in scenario.steps:
        if step.kind is StepKind.USER:
            if steps or turns:
                turns.append({"steps": steps})
            steps = []
            if step.variables:
                steps.append({"userInput": {"variables": copy.deepcopy(step.variables)}})
            if step.event:
                steps.append({"userInput": {"event": {"event": step.event}}})
            if step.text or not (step.variables or step.event):
                steps.append({"userInput": {"text": step.text}})
        elif step.kind is StepKind.TOOL:
            steps.append(
                {"expectation": {"toolCall": {"tool": step.tool, "args": copy.deepcopy(step.args)}}}
            )
        elif step.kind is StepKind.EXPECT and step.expectation is not None:
            steps.append({"expectation": _expectation_json(app, step.expectation)})
    if steps:
        turns.append({"steps": steps})
    return {"turns": turns}


def _same_golden(app: AppSpec, scenario: ScenarioSpec, original: Mapping[str, Any]) -> bool:
    back, _ = evaluation_to_scenario(app, original, "")
    return back is not None and back.steps == scenario.steps


def scenario_to_evaluation(app: AppSpec, scenario: ScenarioSpec) -> dict[str, Any]:
    """The CX evaluation of `scenario` (a golden). An imported one that still converts to
    the same steps is its original JSON; a changed one, the original with ``golden``
    replaced."""
    original = scenario.cx.get("evaluation") if isinstance(scenario.cx, Mapping) else None
    if isinstance(original, Mapping) and original.get("golden") is not None:
        if _same_golden(app, scenario, original):
            return copy.deepcopy(dict(original))
        out = copy.deepcopy(dict(original))
        golden = dict(out.get("golden") or {})
        golden["turns"] = _golden(app, scenario)["turns"]
        out["golden"] = golden
        out["displayName"] = scenario.name
        return out
    return {"displayName": scenario.name, "golden": _golden(app, scenario)}


def export_problems(scenario: ScenarioSpec) -> list[Diagnostic]:
    """What of a scenario a CX golden has no place for (reported, not silently dropped)."""
    found: list[Diagnostic] = []
    where = f"agents.{scenario.agent}.scenarios.{scenario.name}"
    file = f"evaluations/{folder_of(scenario)}/{folder_of(scenario)}.json"
    scripted = sum(1 for s in scenario.steps if s.kind is StepKind.AGENT and s.text)
    if scripted:
        found.append(
            _note(
                "SC620",
                INFO,
                file,
                where,
                Message(
                    "%(scripted)s scripted agent message(s) are not exported (a "
                    "golden has the model reply; write `expect agent:` to have CX "
                    "check a reply): imported back, each is an empty `agent:` line",
                    scripted=scripted,
                ),
            )
        )
    tools = sum(1 for s in scenario.steps if s.kind is StepKind.TOOL)
    if tools:
        found.append(
            _note(
                "SC620",
                INFO,
                file,
                where,
                Message(
                    "%(tools)s `tool:` step(s) are exported as toolCall expectations (CX "
                    "has no scripted call): imported back, each reads `expect call:`",
                    tools=tools,
                ),
            )
        )
    callbacks = sum(1 for s in scenario.steps if s.kind is StepKind.CALLBACK)
    if callbacks:
        found.append(
            _note(
                "SC620",
                W,
                file,
                where,
                Message(
                    "%(callbacks)s callback step(s) have no place in a CX golden; not exported",
                    callbacks=callbacks,
                ),
            )
        )
    return found


# ---------------------------------------------------------------- import


def _root_agent(app: AppSpec) -> str:
    """Where a golden starts: CX starts every conversation at the app's root agent (its
    ``rootAgent``), whatever the golden's calls; a call of a sub-agent's tool happens after
    the root's model has routed there (a transfer)."""
    root = next((a for a in app.agents if a.is_root), app.agents[0] if app.agents else None)
    return root.name if root is not None else ""


def _agent_name(app: AppSpec, ref: str) -> str:
    """A CX agent reference (folder, display name, resource path) as a display name."""
    last = ref.rstrip("/").rsplit("/", 1)[-1]
    for agent in app.agents:
        cx_name = agent.cx.get("name") if isinstance(agent.cx, Mapping) else None
        # _FOLDER_RE alone: how exports before accents were dropped named the agent.
        folders = (_folder(agent.name), _FOLDER_RE.sub("_", agent.name))
        if ref in (agent.name, *folders) or last in (
            agent.name,
            *folders,
            cx_name,
            (cx_name or "").rsplit("/", 1)[-1],
        ):
            return agent.name
    return last


def _tool_name(ref: Any) -> str:
    return ref.rstrip("/").rsplit("/", 1)[-1] if isinstance(ref, str) else ""


def _called_tool(app: AppSpec, data: Mapping[str, Any]) -> str:
    """The tool a golden's ``toolCall``/``toolResponse``/``mockToolResponse`` names: ``tool``
    (a resource path or name), ``displayName``, or ``toolsetTool`` ({toolset, toolId}: the
    app's tool for that toolset's operation, ``<toolset>_<toolId>`` as CX names it)."""
    named = _tool_name(data.get("tool") or data.get("displayName"))
    ref = data.get("toolsetTool")
    if named or not isinstance(ref, Mapping):
        return named
    toolset = _tool_name(ref.get("toolset"))
    tool_id = ref.get("toolId") if isinstance(ref.get("toolId"), str) else ""
    for tool in app.tools:
        cx = tool.cx if isinstance(tool.cx, Mapping) else {}
        if cx.get("operation") == tool_id and cx.get("toolset") == toolset:
            return tool.name
    return re.sub(r"[^A-Za-z0-9_]+", "_", f"{toolset}_{tool_id}").strip("_")


def scenario_kind_message(name: str) -> Message:
    """SC607's words for an evaluation of the scenario kind, one wording wherever the
    import meets one (a ZIP's evaluations, one evaluation read alone)."""
    return Message(
        "%(name)s is an evaluation of the scenario kind (a simulated user with a task and "
        "rubrics): it needs a model; kept as is, listed, not run",
        name=repr(name),
    )


def evaluation_to_scenario(
    app: AppSpec, data: Mapping[str, Any], path: str
) -> tuple[ScenarioSpec | None, tuple[Diagnostic, ...]]:
    """The scenario a CX evaluation's golden describes (None for one of the scenario kind,
    or one that cannot be read), and what could not be converted. Never raises."""
    found: list[Diagnostic] = []
    name = data.get("displayName")
    folder = path.split("/")[1] if path.count("/") >= 2 else ""
    if not isinstance(name, str) or not name.strip():
        name = folder or "Evaluation"
    name = name.strip()
    golden = data.get("golden")
    if not isinstance(golden, Mapping):
        if isinstance(data.get("scenario"), Mapping):
            found.append(_note("SC607", INFO, path, "scenario", scenario_kind_message(name)))
        else:
            found.append(
                _note("SC606", W, path, "golden", Message("no golden turns; not imported"))
            )
        return None, tuple(found)
    turns = golden.get("turns")
    if not isinstance(turns, list):
        found.append(_note("SC606", W, path, "golden.turns", Message("not a list; not imported")))
        return None, tuple(found)
    steps: list[StepSpec] = []
    for t, turn in enumerate(turns):
        turn_steps = turn.get("steps") if isinstance(turn, Mapping) else None
        if not isinstance(turn_steps, list):
            found.append(_note("SC606", W, path, f"golden.turns[{t}].steps", Message("not a list")))
            continue
        text_parts: list[str] = []
        variables: dict[str, Any] = {}
        event = ""
        rest: list[StepSpec] = []
        for s, step in enumerate(turn_steps):
            where = f"golden.turns[{t}].steps[{s}]"
            if not isinstance(step, Mapping):
                found.append(_note("SC606", W, path, where, Message("not an object; skipped")))
                continue
            if isinstance(step.get("userInput"), Mapping):
                given = step["userInput"]
                if isinstance(given.get("text"), str):
                    text_parts.append(given["text"])
                elif isinstance(given.get("variables"), Mapping):
                    variables.update(copy.deepcopy(dict(given["variables"])))
                elif isinstance(given.get("event"), Mapping) and isinstance(
                    given["event"].get("event"), str
                ):
                    event = given["event"]["event"]
                else:
                    kinds = ", ".join(sorted(given)) or "nothing"
                    found.append(
                        _note(
                            "SC607",
                            W,
                            path,
                            f"{where}.userInput",
                            Message(
                                "a user input of %(kinds)s cannot be simulated; left out",
                                kinds=kinds,
                            ),
                        )
                    )
                continue
            if isinstance(step.get("agentTransfer"), Mapping):
                target = _agent_name(app, str(step["agentTransfer"].get("targetAgent", "")))
                rest.append(
                    StepSpec(
                        StepKind.EXPECT,
                        expectation=ExpectationSpec(ExpectKind.TRANSFER, agent=target),
                    )
                )
                continue
            expected = step.get("expectation")
            if not isinstance(expected, Mapping):
                found.append(
                    _note("SC606", W, path, where, Message("neither input nor expectation"))
                )
                continue
            converted = _expectation(app, expected, path, f"{where}.expectation", found)
            if converted is None:
                continue
            rest.append(StepSpec(StepKind.EXPECT, expectation=converted))
        steps.append(
            StepSpec(StepKind.USER, text="\n".join(text_parts), variables=variables, event=event)
        )
        steps.extend(rest)
        if not any(
            r.expectation is not None and r.expectation.kind is ExpectKind.AGENT for r in rest
        ):
            steps.append(StepSpec(StepKind.AGENT))  # the model's reply, whatever its text
    if len(name) > rules.SCENARIO_NAME_MAX_LENGTH:
        name = name[: rules.SCENARIO_NAME_MAX_LENGTH]
    scenario = ScenarioSpec(
        name=name,
        agent=_root_agent(app),
        session=SessionSpec(now=_clock(data.get("createTime"))),
        steps=tuple(steps),
        cx={"evaluation": copy.deepcopy(dict(data)), "folder": folder},
    )
    return scenario, tuple(found)


def _clock(stamp: Any) -> str:
    """The evaluation's ``createTime`` (RFC 3339, nanoseconds) as the session clock: the
    golden was written for that day. "" when there is none (Google's bella_notte has none:
    a designer sets the scenario's clock)."""
    if not isinstance(stamp, str):
        return ""
    stamp = re.sub(r"(\.\d{6})\d+", r"\1", stamp.strip())
    return stamp if valid_now(stamp) else ""


def _expectation(
    app: AppSpec,
    data: Mapping[str, Any],
    path: str,
    where: str,
    found: list[Diagnostic],
) -> ExpectationSpec | None:
    note = data.get("note") if isinstance(data.get("note"), str) else ""
    note = note.replace("]", ")").replace("\n", " ").strip()
    if isinstance(data.get("toolCall"), Mapping):
        call = data["toolCall"]
        args = call.get("args")
        return ExpectationSpec(
            ExpectKind.CALL,
            tool=_called_tool(app, call),
            value=copy.deepcopy(dict(args)) if isinstance(args, Mapping) else None,
            note=note,
        )
    for key, kind in (("toolResponse", ExpectKind.RESPONSE), ("mockToolResponse", ExpectKind.MOCK)):
        if isinstance(data.get(key), Mapping):
            response = data[key]
            value = response.get("response")
            return ExpectationSpec(
                kind,
                tool=_called_tool(app, response),
                value=copy.deepcopy(value) if value is not None else {},
                note=note,
            )
    if isinstance(data.get("updatedVariables"), Mapping):
        return ExpectationSpec(
            ExpectKind.STATE, value=copy.deepcopy(dict(data["updatedVariables"])), note=note
        )
    if data.get("noToolCalls") is True:
        return ExpectationSpec(ExpectKind.NO_CALLS, note=note)
    if isinstance(data.get("agentTransfer"), Mapping):
        target = _agent_name(app, str(data["agentTransfer"].get("targetAgent", "")))
        return ExpectationSpec(ExpectKind.TRANSFER, agent=target, note=note)
    if isinstance(data.get("agentResponse"), Mapping):
        chunks = data["agentResponse"].get("chunks")
        texts = [
            c["text"]
            for c in (chunks if isinstance(chunks, list) else [])
            if isinstance(c, Mapping) and isinstance(c.get("text"), str)
        ]
        return ExpectationSpec(ExpectKind.AGENT, value="\n".join(texts), note=note)
    found.append(
        _note("SC607", W, path, where, Message("an expectation Statecraft cannot check; left out"))
    )
    return None


def needs_model_evaluations(app: AppSpec) -> list[tuple[str, str]]:
    """The evaluations of the scenario kind an imported app carries: (name, path)."""
    out: list[tuple[str, str]] = []
    files = app.cx.get("files") if isinstance(app.cx, Mapping) else None
    if not isinstance(files, Mapping):
        return out
    for path in sorted(files):
        parts = path.split("/")
        if len(parts) != 3 or parts[0] != "evaluations" or not path.endswith(".json"):
            continue
        try:
            data = json.loads(files[path])
        except (ValueError, TypeError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("scenario"), dict):
            out.append((str(data.get("displayName") or parts[1]), path))
    return out
