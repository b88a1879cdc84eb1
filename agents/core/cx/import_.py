"""Import: the app, the goldens and the diagnostics a CX Agent Studio export holds
(`read_cx_files`, `from_cx_files`): the app, its variables and agents here; the state of
the import in `import_state`, tools and toolsets in `import_tools`."""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agents.core import rules
from agents.core.cx import evaluations
from agents.core.cx.fields import FIELDS
from agents.core.cx.import_state import _Import
from agents.core.cx.import_tools import _read_tools, _read_toolsets, _ToolRefs, note_cut_name
from agents.core.cx.layout import _CALLBACK_FIELDS, INFO, E, W, _dotted, _last_segment, _note
from agents.core.cx.schema_to_cx import CX_TYPES
from agents.core.cx.variables import variable_from_cx_schema
from agents.core.diagnostics import Diagnostic, Message
from agents.core.formats import check_app_spec
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackSpec,
    ExpectKind,
    ScenarioSpec,
    SchemaSpec,
    StepKind,
    ToolKind,
    ToolSpec,
    VariableSpec,
    VariableType,
)

__all__ = ["from_cx_files", "read_cx_files"]


_APP_FILES = ("app.json", "app.yaml", "app.yml")
_APP_USED = frozenset({"name", "displayName", "description", "rootAgent", "variableDeclarations"})
_APP_BEHAVIOUR = frozenset({"globalInstruction", "guardrails", "predefinedVariableDeclarations"})
_AGENT_USED = frozenset(
    {
        "name",
        "displayName",
        "description",
        "instruction",
        "tools",
        "childAgents",
        "llmAgent",
        "toolsets",
    }
    | set(_CALLBACK_FIELDS.values())
)
_AGENT_BEHAVIOUR = frozenset(
    {"remoteDialogflowAgent", "guardrails", "transferRules", "modelSettings"}
)


def _find_app_json(
    files: Mapping[str, bytes],
) -> tuple[str | None, tuple[Diagnostic, ...]]:
    candidates = [p for p in files if posixpath.basename(p) in _APP_FILES]
    if not candidates:
        return None, (
            _note("SC604", E, None, "", Message("the ZIP has no app.json (or app.yaml)")),
        )
    depth = min(p.count("/") for p in candidates)
    top = sorted(p for p in candidates if p.count("/") == depth)
    if len({posixpath.dirname(p) for p in top}) > 1:
        return None, (
            _note(
                "SC604",
                E,
                None,
                "",
                Message("the ZIP has several apps: %(top)s", top=", ".join(top)),
            ),
        )
    return top[0][: -len(posixpath.basename(top[0]))], ()


def from_cx_files(files: Mapping[str, bytes]) -> tuple[AppSpec | None, tuple[Diagnostic, ...]]:
    """The app a CX export holds (see `read_cx_files`, without the scenarios)."""
    app, _, found = read_cx_files(files)
    return app, found


def read_cx_files(
    files: Mapping[str, bytes],
) -> tuple[AppSpec | None, tuple[ScenarioSpec, ...], tuple[Diagnostic, ...]]:
    """The app a CX export holds, its golden evaluations as scenarios
    (`agents.core.cx.evaluations`), and what could not be read. Never raises.

    The app is None when nothing usable is found (no app.json, unreadable
    JSON); otherwise it comes with the diagnostics of `check_app_spec` too
    (errors mean it cannot be imported as it is). What Statecraft does not edit is
    kept (`agents.core.cx.carry`): each object's original JSON in its ``cx``, and every
    file no object was read from in the app's ``cx["files"]``.
    """
    prefix, problems = _find_app_json(files)
    if prefix is None:
        return None, (), problems
    inside = {p[len(prefix) :]: data for p, data in files.items() if p.startswith(prefix)}
    state = _Import(inside)
    app_path = next(p for p in _APP_FILES if p in inside)
    state.app_path = app_path
    for other in _APP_FILES:
        if other != app_path and other in inside:
            message = Message(
                "the ZIP also has %(other)s; %(app_path)s is read and %(other)s kept as it is",
                other=other,
                app_path=app_path,
            )
            state.note("SC604", W, other, "", message)
    app_data = state.json_object(app_path)
    if app_data is None:
        return None, (), tuple(state.found)
    state.unknown_fields(app_path, app_data, _APP_USED, _APP_BEHAVIOUR, message_type="App")

    tools, tool_refs, tool_files, kept_tools = _read_tools(state)
    toolsets = _read_toolsets(state, {t.name for t in tools})
    agents_raw = _read_agent_files(state)
    agent_refs: dict[str, str] = {}
    for folder, (_, data) in agents_raw.items():
        display = data.get("displayName")
        display = display.strip() if isinstance(display, str) and display.strip() else folder
        for key in (folder, data.get("name"), display):
            if isinstance(key, str) and key:
                agent_refs.setdefault(key, display)
                agent_refs.setdefault(_last_segment(key), display)

    root_ref = app_data.get("rootAgent")
    root_name = None
    if isinstance(root_ref, str) and root_ref:
        root_name = agent_refs.get(root_ref) or agent_refs.get(_last_segment(root_ref))
        if root_name is None and not state.unreadable_ref("agents", root_ref):
            state.note(
                "SC608",
                E,
                app_path,
                "rootAgent",
                Message("no agent %(root_ref)s in the ZIP", root_ref=repr(root_ref)),
            )
    elif agents_raw:
        state.note(
            "SC606", W, app_path, "rootAgent", Message("missing; the first agent is the root")
        )

    _check_kept_references(state, app_data, agents_raw, agent_refs)
    refs = _ToolRefs(tool_refs, kept_tools, toolsets)
    agents = []
    agent_files: dict[str, str] = {}
    for path, data in agents_raw.values():
        agent = _read_agent(state, path, data, refs, agent_refs)
        if agent is not None:
            agents.append(replace(agent, is_root=agent.name == root_name))
            agent_files[agent.name] = path
    if agents and not any(a.is_root for a in agents):
        agents[0] = replace(agents[0], is_root=True)
    for name in sorted(refs.platform_used):
        tools.append(
            ToolSpec(
                name=name,
                kind=ToolKind.PLATFORM,
                description=rules.PLATFORM_TOOLS[name],
                cx={"platform": True},
            )
        )
    unique = {id(ts): ts for ts in toolsets.values()}.values()  # a toolset under each alias
    tools.extend(t for ts in unique for t in ts.tools if t.name in refs.toolset_used)

    variables, schemas = _read_variables(state, app_data, app_path)
    name = app_data.get("displayName")
    if not isinstance(name, str) or not name.strip():
        state.note(
            "SC606", W, app_path, "displayName", Message("missing; the app is named 'CX app'")
        )
        name = "CX app"
    description = app_data.get("description", "")
    goldens = _read_goldens(state)
    carried = state.carried_files()
    app = AppSpec(
        name=name.strip(),
        description=description if isinstance(description, str) else "",
        variables=tuple(variables),
        schemas=tuple(schemas),
        tools=tuple(tools),
        agents=tuple(agents),
        cx={"app": app_data, "layout": "yaml" if app_path != "app.json" else "json", **carried},
    )
    already = {d.subject for d in state.found}  # a file with its own note needs no other
    for path in sorted(carried["files"]) + sorted(carried.get("binary", {})):
        if path not in already:
            state.note("SC607", INFO, path, "", Message("kept as is and written back on export"))
    variable_index = {v.name: i for i, v in enumerate(app.variables)}
    for d in check_app_spec(app):
        state.found.append(_place(d, variable_index, tool_files, agent_files, app_path))
    scenarios: list[ScenarioSpec] = []
    names: set[str] = set()
    for path, data in goldens:
        scenario, notes = evaluations.evaluation_to_scenario(app, data, path)
        state.found.extend(notes)
        if scenario is not None and scenario.agent:
            while (scenario.agent, scenario.name.lower()) in names:
                scenario = replace(scenario, name=f"{scenario.name} (2)")
            names.add((scenario.agent, scenario.name.lower()))
            scenarios.append(scenario)
    root = next((a for a in app.agents if a.is_root), None)
    if scenarios and root is not None and len(app.agents) > 1:
        message = Message(
            "the %(scenarios_count)s golden(s) start at the root agent "
            "%(name)s, as CX starts every conversation: a sub-agent's "
            "tools run once the root's model has transferred to it (a "
            "golden that leaves that routing to the model needs the "
            "routing call written into its first turn to run offline)",
            scenarios_count=len(scenarios),
            name=root.name,
        )
        state.note("SC610", INFO, state.app_path, "rootAgent", message)
    _note_golden_steps(state, scenarios)
    return app, tuple(scenarios), tuple(state.found)


def _note_golden_steps(state: _Import, scenarios: list[ScenarioSpec]) -> None:
    """One note of what the goldens read as in the script (SC612): a round trip through CX
    changes a `tool:` step to `expect call:` and a scripted reply to an empty `agent:`."""
    calls = replies = 0
    for scenario in scenarios:
        for step in scenario.steps:
            if step.kind is StepKind.AGENT and not step.text:
                replies += 1
            elif (
                step.kind is StepKind.EXPECT
                and step.expectation is not None
                and step.expectation.kind is ExpectKind.CALL
            ):
                calls += 1
    if calls:
        message = Message(
            "%(calls)s toolCall expectation(s) read `expect call:` (a golden has no "
            "scripted call: a `tool:` step exported from Statecraft comes back so)",
            calls=calls,
        )
        state.note("SC612", INFO, "evaluations/", "golden.turns", message)
    if replies:
        message = Message(
            "%(replies)s turn(s) without an agentResponse end with an empty `agent:` line "
            "(the model replies there, its text not checked; a scripted agent message "
            "exported from Statecraft comes back so)",
            replies=replies,
        )
        state.note("SC612", INFO, "evaluations/", "golden.turns", message)


def _read_goldens(state: _Import) -> list[tuple[str, dict[str, Any]]]:
    """The golden evaluations of the ZIP (``evaluations/<name>/<name>.json``). The other
    evaluations (of the scenario kind: they need a model) stay unread: kept verbatim."""
    goldens: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(state.files):
        parts = path.split("/")
        if len(parts) != 3 or parts[0] != "evaluations" or not path.endswith(".json"):
            continue
        data = state.json_object(path)
        if data is not None and isinstance(data.get("golden"), dict):
            goldens.append((path, data))
            continue
        state.consumed.discard(path)
        if data is not None and isinstance(data.get("scenario"), dict):
            name = data.get("displayName") or parts[1]
            state.note("SC607", INFO, path, "scenario", evaluations.scenario_kind_message(name))
    return goldens


def _check_kept_references(
    state: _Import,
    app_data: Mapping[str, Any],
    agents_raw: Mapping[str, tuple[str, dict[str, Any]]],
    agent_refs: Mapping[str, str],
) -> None:
    """What Statecraft keeps as is may still name something the ZIP lacks: guardrails (of
    the app and of agents) and the agents of transfer rules. CX would refuse such an app;
    the import keeps it and warns, naming the fix."""
    guardrails: set[str] = set()
    for folder in state.folders("guardrails"):
        guardrails.add(folder)
        path = state.object_file(f"guardrails/{folder}")
        data = state.json_object(path) if path else None
        state.keep(f"guardrails/{folder}/")
        if data is not None:
            state.unknown_fields(
                path, data, FIELDS["Guardrail"], frozenset(), message_type="Guardrail"
            )
            guardrails.update(
                v for k in ("name", "displayName") if isinstance(v := data.get(k), str)
            )
    owners = [(state.app_path, app_data), *agents_raw.values()]
    for path, data in owners:
        for i, reference in enumerate(data.get("guardrails") or []):
            if isinstance(reference, str) and not (
                reference in guardrails
                or _last_segment(reference) in guardrails
                or state.unreadable_ref("guardrails", reference)
            ):
                message = Message(
                    "no guardrail %(reference)s in the ZIP; CX will refuse the "
                    "app: add guardrails/<name>/ or remove the reference",
                    reference=repr(reference),
                )
                state.note("SC608", W, path, f"guardrails[{i}]", message)
    for path, data in agents_raw.values():
        rules_ = data.get("transferRules")
        for i, rule in enumerate(rules_ if isinstance(rules_, list) else []):
            child = rule.get("childAgent") if isinstance(rule, dict) else None
            if isinstance(child, str) and not (
                child in agent_refs
                or _last_segment(child) in agent_refs
                or state.unreadable_ref("agents", child)
            ):
                message = Message(
                    "no agent %(child)s in the ZIP; CX will refuse the app: name "
                    "one of its agents or remove the rule",
                    child=repr(child),
                )
                state.note("SC608", W, path, f"transferRules[{i}].childAgent", message)


def _place(
    d: Diagnostic,
    variable_index: Mapping[str, int],
    tool_files: Mapping[str, str],
    agent_files: Mapping[str, str],
    app_path: str = "app.json",
) -> Diagnostic:
    """A check on the Statecraft app, told in terms of the CX file and field it came from."""
    where = d.field or ""
    parts = where.split(".")
    file, cx_field = None, where
    if parts[0] in ("variables", "schemas", "name"):
        file = app_path
        if parts[0] == "variables" and len(parts) > 1 and parts[1] in variable_index:
            declaration = f"variableDeclarations[{variable_index[parts[1]]}]"
            last = parts[-1]
            cx_field = {"default": f"{declaration}.schema.default", "name": f"{declaration}.name"}
            cx_field = cx_field.get(last, f"{declaration}.schema")
        elif parts[0] == "name":
            cx_field = "displayName"
    elif parts[0] == "tools" and len(parts) > 1:
        file = tool_files.get(parts[1])
    elif parts[0] == "agents" and len(parts) > 1:
        file = agent_files.get(parts[1])
    message = Message("%(file)s: %(message)s", file=file, message=d.message) if file else d.message
    return replace(d, subject=file, field=cx_field, message=message)


def _read_variables(
    state: _Import, app_data: Mapping[str, Any], app_path: str = "app.json"
) -> tuple[list[VariableSpec], list[SchemaSpec]]:
    declarations = app_data.get("variableDeclarations", [])
    if not isinstance(declarations, list):
        state.note("SC606", E, app_path, "variableDeclarations", Message("must be a list"))
        return [], []
    variables: list[VariableSpec] = []
    schemas: list[SchemaSpec] = []
    for i, declaration in enumerate(declarations):
        where = f"variableDeclarations[{i}]"
        if not isinstance(declaration, dict):
            state.note("SC606", E, state.app_path, where, Message("must be an object"))
            continue
        name = declaration.get("name")
        if not isinstance(name, str) or rules.name_problems(name):
            state.note(
                "SC609",
                E,
                state.app_path,
                f"{where}.name",
                Message("%(name)s is not a valid name", name=repr(name)),
            )
            continue
        state.unknown_fields(
            state.app_path,
            declaration,
            frozenset({"name", "description", "schema"}),
            frozenset(),
            prefix=f"{where}.",
            message_type="VariableDeclaration",
        )
        description = declaration.get("description", "")
        if not isinstance(description, str):
            state.note(
                "SC606", W, state.app_path, f"{where}.description", Message("not text; left empty")
            )
            description = ""
        cx_schema = declaration.get("schema")
        if not isinstance(cx_schema, dict):
            state.note(
                "SC606", E, state.app_path, f"{where}.schema", Message("a variable needs a schema")
            )
            continue
        items = cx_schema.get("items")
        unknown = [
            (at, problem)
            for at, part in ((".schema.type", cx_schema), (".schema.items.type", items))
            if isinstance(part, dict) and (problem := _unknown_cx_type(part)) is not None
        ]
        for at, problem in unknown:
            state.note("SC606", E, state.app_path, f"{where}{at}", problem)
        if unknown:
            continue
        try:
            read, problems = variable_from_cx_schema(cx_schema)
        except (TypeError, ValueError, RecursionError) as exc:
            # A CX schema with a non-text "type" ([...], {...}) trips the converter.
            state.note(
                "SC606",
                E,
                state.app_path,
                f"{where}.schema",
                Message("cannot be read (%(exc)s)", exc=exc),
            )
            continue
        for d in problems:
            at = f"{where}.schema{_dotted(d.field)}"
            message = Message("%(name)s: %(message)s", name=name, message=d.message)
            state.found.append(_note(d.code, d.severity, state.app_path, at, message))
        schema_name = None
        if read.schema is not None:
            schema_name = _schema_for(state, schemas, read, name, where)
        variables.append(
            VariableSpec(
                name=name,
                type=read.type,
                default=read.default,
                description=description,
                item_type=read.item_type,
                schema=schema_name,
                cx=declaration,
            )
        )
    return variables, schemas


def _unknown_cx_type(cx_schema: dict[str, Any]) -> Message | None:
    """The refusal of a variable's ``schema.type`` that names no CX type (``DECIMAL``),
    with the closest CX type; None when the type is one (or is not text)."""
    kind = cx_schema.get("type", cx_schema.get("type_"))
    if not isinstance(kind, str) or kind in _CX_TYPE_NAMES or kind == "TYPE_UNSPECIFIED":
        return None
    names = ", ".join(_CX_TYPE_NAMES)
    upper = kind.upper()
    if upper in _CX_TYPE_NAMES:
        close = [upper]
    elif upper in _CX_TYPE_SYNONYMS:
        close = [_CX_TYPE_SYNONYMS[upper]]
    else:
        close = difflib.get_close_matches(upper, _CX_TYPE_NAMES, n=1, cutoff=0.6)
    if close:
        return Message(
            "unknown type %(type)s: use one of %(names)s (did you mean %(suggestion)s?)",
            type=repr(kind),
            names=names,
            suggestion=close[0],
        )
    return Message("unknown type %(type)s: use one of %(names)s", type=repr(kind), names=names)


_CX_TYPE_NAMES = tuple(CX_TYPES.values())
# Names another schema language gives CX's types (DECIMAL is no CX type; NUMBER is).
_CX_TYPE_SYNONYMS = {
    "DECIMAL": "NUMBER",
    "FLOAT": "NUMBER",
    "DOUBLE": "NUMBER",
    "INT": "INTEGER",
    "LONG": "INTEGER",
    "BOOL": "BOOLEAN",
    "TEXT": "STRING",
    "STR": "STRING",
    "LIST": "ARRAY",
    "DICT": "OBJECT",
    "MAP": "OBJECT",
}


def _schema_for(
    state: _Import, schemas: list[SchemaSpec], read: Any, variable: str, where: str
) -> str:
    for existing in schemas:
        if existing.schema == read.schema:
            return existing.name
    taken = {s.name for s in schemas}
    title = read.schema.get("title")
    if isinstance(title, str) and not rules.name_problems(title):
        base = title
    else:
        base = "".join(part.capitalize() for part in variable.split("_") if part) or "Schema"
        if read.type is VariableType.LIST:
            base += "Item"
        base = base[:60]
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}{n}", n + 1
    schemas.append(SchemaSpec(name=candidate, schema=read.schema))
    state.note(
        "SC624",
        INFO,
        state.app_path,
        f"{where}.schema",
        Message(
            "the object schema of %(variable)s is imported as the schema %(candidate)s",
            variable=variable,
            candidate=candidate,
        ),
    )
    return candidate


def _read_agent_files(state: _Import) -> dict[str, tuple[str, dict[str, Any]]]:
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for folder in state.folders("agents"):
        path = state.object_file(f"agents/{folder}")
        if path is None:
            continue
        data = state.json_object(path)
        if data is not None:
            found[folder] = (path, data)
    return found


def _read_agent(
    state: _Import,
    path: str,
    data: Mapping[str, Any],
    refs: _ToolRefs,
    agent_refs: Mapping[str, str],
) -> AgentSpec | None:
    state.unknown_fields(path, data, _AGENT_USED, _AGENT_BEHAVIOUR, message_type="Agent")
    folder = path.split("/")[1]
    display = data.get("displayName")
    display = display.strip() if isinstance(display, str) and display.strip() else folder
    instructions = state.text_field(path, "instruction", data.get("instruction"))
    description = data.get("description", "")
    tools: list[str] = []
    for i, reference in enumerate(_string_list(state, path, "tools", data.get("tools"))):
        name = refs.tools.get(reference) or refs.tools.get(_last_segment(reference))
        if name is not None:
            tools.append(name)
        elif _last_segment(reference) in rules.PLATFORM_TOOLS:
            tools.append(_last_segment(reference))
            refs.platform_used.add(_last_segment(reference))
        elif reference in refs.kept or _last_segment(reference) in refs.kept:
            message = Message(
                "%(reference)s is kept as is; the simulation cannot call it",
                reference=repr(reference),
            )
            state.note("SC607", INFO, path, f"tools[{i}]", message)
        elif not state.unreadable_ref("tools", reference):
            state.note(
                "SC608",
                E,
                path,
                f"tools[{i}]",
                Message("no tool %(reference)s in the ZIP", reference=repr(reference)),
            )
    toolsets = data.get("toolsets", [])
    for i, entry in enumerate(toolsets if isinstance(toolsets, list) else []):
        reference = entry.get("toolset") if isinstance(entry, dict) else None
        toolset = refs.toolset(reference) if isinstance(reference, str) else None
        if toolset is None:
            if isinstance(reference, str) and state.unreadable_ref("toolsets", reference):
                continue
            state.note(
                "SC608",
                E,
                path,
                f"toolsets[{i}]",
                Message("no toolset %(reference)s in the ZIP", reference=repr(reference)),
            )
            continue
        wanted = entry.get("toolIds")
        for tool_id in wanted if toolset.mcp is not None and isinstance(wanted, list) else ():
            if isinstance(tool_id, str) and tool_id:
                before = len(toolset.tools)
                made = toolset.mcp_tool(tool_id)
                if made is not None and len(toolset.tools) > before:
                    note_cut_name(state, path, made)  # said once, when the tool is made
        for tool in toolset.tools:
            if isinstance(wanted, list) and wanted and tool.cx["operation"] not in wanted:
                continue
            tools.append(tool.name)
            refs.toolset_used.add(tool.name)
    children: list[str] = []
    for i, reference in enumerate(
        _string_list(state, path, "childAgents", data.get("childAgents"))
    ):
        name = agent_refs.get(reference) or agent_refs.get(_last_segment(reference))
        if name is None and not state.unreadable_ref("agents", reference):
            state.note(
                "SC608",
                E,
                path,
                f"childAgents[{i}]",
                Message("no agent %(reference)s in the ZIP", reference=repr(reference)),
            )
        elif name is not None:
            children.append(name)
    callbacks: list[CallbackSpec] = []
    for kind, key in _CALLBACK_FIELDS.items():
        entries = data.get(key, [])
        if not isinstance(entries, list):
            state.note("SC606", E, path, key, Message("must be a list of callbacks"))
            continue
        order = 0
        for i, entry in enumerate(entries):
            where = f"{key}[{i}]"
            if not isinstance(entry, dict):
                state.note("SC606", E, path, where, Message("must be an object"))
                continue
            state.unknown_fields(
                path,
                entry,
                frozenset({"pythonCode", "disabled", "description"}),
                frozenset(),
                f"{where}.",
                message_type="Callback",
            )
            if entry.get("disabled") is True:
                message = Message(
                    "a disabled callback is kept as is (and stays disabled); it does not run"
                )
                state.note("SC607", INFO, path, where, message)
                continue
            code = state.text_field(path, f"{where}.pythonCode", entry.get("pythonCode"))
            if code is not None:
                callbacks.append(CallbackSpec(kind=kind, code=code, order=order, cx=entry))
                order += 1
    return AgentSpec(
        name=display,
        instructions=instructions or "",
        description=description if isinstance(description, str) else "",
        tools=tuple(dict.fromkeys(tools)),
        children=tuple(dict.fromkeys(children)),
        callbacks=tuple(callbacks),
        cx=dict(data),
    )


def _string_list(state: _Import, path: str, where: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        state.note("SC606", E, path, where, Message("must be a list of names"))
        return []
    return value
