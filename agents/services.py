"""Every write to the domain: keyword-only, atomic, validated with the core before saving."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Model

from agents.core import schemas as core_schemas
from agents.core import types as core_types
from agents.core.diagnostics import Diagnostic, Severity
from agents.core.formats import not_json_data
from agents.core.parse import TokenKind
from agents.core.parse import parse as parse_instructions
from agents.core.script import parse_script
from agents.models import (
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    Agent,
    AgentApp,
    AppShare,
    Callback,
    CallbackKind,
    Channel,
    Modality,
    Scenario,
    ScenarioStep,
    Schema,
    ShareRole,
    Tool,
    ToolKind,
    Variable,
    VariableType,
)

NAME_RE = re.compile(NAME_PATTERN)

CODES: dict[str, str] = {
    "SC001": "A field has a value the object cannot be saved with.",
    "SC002": "Someone else saved the object since you opened it (no lost update).",
    "SC003": "A name is missing, too long or has characters a name cannot have.",
    "SC004": "A name is already used in this app.",
    "SC005": "An unknown variable type, tool kind or callback kind.",
    "SC006": "A custom object has no schema, or a schema of another app.",
    "SC007": "Python code of a tool or callback does not parse.",
    "SC008": "A JSON field has the wrong shape (object expected).",
    "SC009": "A scenario setting is out of range (budget, channel, modality).",
    "SC010": "A scenario sets a variable the app does not declare.",
}
UNSET: Any = object()


class ServiceError(Exception):
    """A write was refused; `diagnostics` say which field and why."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))

    def field_errors(self) -> dict[str, list[str]]:
        errors: dict[str, list[str]] = {}
        for diagnostic in self.diagnostics:
            errors.setdefault(diagnostic.field or "__all__", []).append(diagnostic.message)
        return errors


class StaleObjectError(ServiceError):
    """Someone else saved the object since it was read: the save is refused, nothing is lost."""


def _error(field: str, message: str, code: str = "SC001") -> Diagnostic:
    return Diagnostic(code=code, severity=Severity.ERROR, message=message, field=field)


def _raise_if(diagnostics: Iterable[Diagnostic]) -> None:
    errors = [d for d in diagnostics if d.severity is Severity.ERROR]
    if errors:
        raise ServiceError(errors)


def _check_version(obj: Model, expected_version: int | None) -> None:
    if expected_version is not None and obj.version != expected_version:
        label = obj._meta.verbose_name
        raise StaleObjectError(
            [
                _error(
                    "__all__",
                    f"This {label} was changed by someone else while you were editing it "
                    f"(you edited version {expected_version}, it is now at version {obj.version}). "
                    "Reload to see their change, then apply yours again.",
                    code="SC002",
                )
            ]
        )


def _save(obj: Model) -> None:
    """Save and bump the version; a concurrent unique-constraint hit becomes a ServiceError."""
    if obj.pk is not None:
        obj.version += 1
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError as exc:
        raise ServiceError(
            [
                _error(
                    "name", "That name was just taken by another save in this app; choose another."
                )
            ]
        ) from exc


def _name_diagnostics(name: str, *, field: str = "name") -> list[Diagnostic]:
    if not name:
        return [_error(field, "Name is required.", "SC003")]
    if len(name) > NAME_MAX_LENGTH:
        return [_error(field, f"Name is too long: at most {NAME_MAX_LENGTH} characters.", "SC003")]
    if not NAME_RE.match(name):
        return [
            _error(
                field,
                f"'{name}' is not a valid name: use letters, digits and underscores, "
                "not starting with a digit (for example customer_name).",
                "SC003",
            )
        ]
    return []


def _unique(model: type[Model], obj: Any, *, what: str) -> list[Diagnostic]:
    if obj.app_id is None:  # a new app in the admin: nothing to clash with yet
        return []
    clash = model.objects.filter(app_id=obj.app_id, name=obj.name).exclude(pk=obj.pk)
    if obj.name and clash.exists():
        return [_error("name", f"A {what} named '{obj.name}' already exists in this app.", "SC004")]
    return []


def _locked(model: type[Model], pk: int) -> Any:
    return model.objects.select_for_update().get(pk=pk)


# ---------------------------------------------------------------- apps


@transaction.atomic
def app_create(*, owner: AbstractBaseUser, name: str, description: str = "") -> AgentApp:
    name = name.strip()
    if not name:
        raise ServiceError([_error("name", "Give the app a name.")])
    _check_app_name_length(name)
    if AgentApp.objects.filter(owner=owner, name=name).exists():
        raise ServiceError([_error("name", f"You already have an app named '{name}'.", "SC004")])
    app = AgentApp(owner=owner, name=name, description=description)
    _save(app)
    agent_create(app=app, display_name="root_agent", is_root=True)
    return app


@transaction.atomic
def app_update(
    *,
    app: AgentApp,
    name: str | None = None,
    description: str | None = None,
    expected_version: int | None = None,
) -> AgentApp:
    app = _locked(AgentApp, app.pk)
    _check_version(app, expected_version)
    if name is not None:
        name = name.strip()
        if not name:
            raise ServiceError([_error("name", "Give the app a name.")])
        _check_app_name_length(name)
        if AgentApp.objects.filter(owner=app.owner, name=name).exclude(pk=app.pk).exists():
            raise ServiceError(
                [_error("name", f"You already have an app named '{name}'.", "SC004")]
            )
        app.name = name
    if description is not None:
        app.description = description
    _save(app)
    return app


@transaction.atomic
def app_delete(*, app: AgentApp) -> None:
    # Variables protect their schema; remove them first so the cascade can proceed.
    Variable.objects.filter(app=app).delete()
    app.delete()


def _check_app_name_length(name: str) -> None:
    limit = AgentApp._meta.get_field("name").max_length
    if len(name) > limit:
        raise ServiceError(
            [
                _error(
                    "name",
                    f"An app name has at most {limit} characters; this one has {len(name)}.",
                    "SC003",
                )
            ]
        )


def _app_name_with_suffix(base: str, suffix: str) -> str:
    """`base` + `suffix`, the base shortened so the whole fits the app name's length."""
    limit = AgentApp._meta.get_field("name").max_length
    return base[: limit - len(suffix)].rstrip() + suffix


@transaction.atomic
def app_share(*, app: AgentApp, user: AbstractBaseUser, role: str) -> AppShare:
    app_share_role_check(role=role)
    if user.pk == app.owner_id:
        raise ServiceError([_error("user", "The owner already has full access.")])
    share, _ = AppShare.objects.update_or_create(app=app, user=user, defaults={"role": role})
    return share


def app_share_role_check(*, role: str) -> None:
    if role not in ShareRole.values:
        raise ServiceError([_error("role", f"Role must be one of {', '.join(ShareRole.values)}.")])


@transaction.atomic
def app_unshare(*, app: AgentApp, user: AbstractBaseUser) -> None:
    AppShare.objects.filter(app=app, user=user).delete()


# ---------------------------------------------------------------- schemas


def _schema_map(app: AgentApp, override: Schema | None = None) -> dict[str, dict]:
    mapping = {s.name: s.json_schema for s in app.schemas.all()}
    if override is not None:
        mapping[override.name] = override.json_schema
    return mapping


def schema_problems(schema: Schema) -> list[Diagnostic]:
    """Name, uniqueness, the metaschema, and every default that uses the schema."""
    diagnostics = _name_diagnostics(schema.name)
    diagnostics += _unique(Schema, schema, what="schema")
    schema_diagnostics = _field(core_schemas.check_schema(schema.json_schema), "json_schema")
    diagnostics += schema_diagnostics
    if schema.pk is None or _errors_only(schema_diagnostics):
        return diagnostics
    schemas = _schema_map(schema.app, override=schema)
    for variable in schema.variables.all():
        variable.schema = schema
        for d in core_types.validate_value(variable.default, variable.to_spec(), schemas):
            if d.severity is Severity.ERROR:
                diagnostics.append(
                    _error(
                        "json_schema",
                        f"The default of variable '{variable.name}' would no longer fit: "
                        f"{d.message}",
                        d.code,
                    )
                )
    return diagnostics


def _errors_only(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diagnostics if d.severity is Severity.ERROR]


@transaction.atomic
def schema_create(*, app: AgentApp, name: str, json_schema: Any, description: str = "") -> Schema:
    schema = Schema(app=app, name=name, json_schema=json_schema, description=description)
    _raise_if(schema_problems(schema))
    _save(schema)
    return schema


@transaction.atomic
def schema_update(
    *,
    schema: Schema,
    name: str | None = None,
    json_schema: Any = UNSET,
    description: str | None = None,
    expected_version: int | None = None,
) -> Schema:
    schema = _locked(Schema, schema.pk)
    _check_version(schema, expected_version)
    if name is not None:
        schema.name = name
    if json_schema is not UNSET:
        schema.json_schema = json_schema
    if description is not None:
        schema.description = description
    _raise_if(schema_problems(schema))
    _save(schema)
    return schema


@transaction.atomic
def schema_delete(*, schema: Schema) -> None:
    users = list(schema.variables.values_list("name", flat=True))
    if users:
        raise ServiceError(
            [
                _error(
                    "__all__",
                    f"Schema '{schema.name}' is used by {', '.join(users)}; "
                    "change or delete those variables first.",
                )
            ]
        )
    schema.delete()


def _field(diagnostics: Iterable[Diagnostic], field: str) -> list[Diagnostic]:
    """Name the form field that core diagnostics concern (their message keeps the inner path)."""
    return [replace(d, field=field) for d in diagnostics]


# ---------------------------------------------------------------- variables


def _schemas_for(variable: Variable) -> dict[str, dict]:
    if variable.app_id is not None:
        return _schema_map(variable.app)
    return {variable.schema.name: variable.schema.json_schema} if variable.schema_id else {}


def variable_problems(variable: Variable) -> list[Diagnostic]:
    diagnostics = _name_diagnostics(variable.name)
    diagnostics += _unique(Variable, variable, what="variable")
    if variable.type not in VariableType.values:
        diagnostics.append(
            _error(
                "type",
                f"'{variable.type}' is not a variable type; choose one of "
                "Text, Number, Yes/No, Custom object or List.",
                "SC005",
            )
        )
        return diagnostics
    if variable.type == VariableType.LIST:
        if variable.item_type not in VariableType.values or variable.item_type == VariableType.LIST:
            diagnostics.append(
                _error(
                    "item_type",
                    "Choose the type of the list's items: Text, Number, Yes/No or Custom object.",
                    "SC005",
                )
            )
            return diagnostics
    else:
        variable.item_type = ""
    needs_schema = VariableType.OBJECT in (variable.type, variable.item_type)
    if needs_schema and variable.schema_id is None:
        diagnostics.append(
            _error(
                "schema", "A custom object needs a schema: pick one or create it first.", "SC006"
            )
        )
        return diagnostics
    if not needs_schema:
        variable.schema = None
    if (
        variable.schema_id is not None
        and variable.app_id
        and variable.schema.app_id != variable.app_id
    ):
        diagnostics.append(_error("schema", "That schema belongs to another app.", "SC006"))
        return diagnostics
    if variable.default is not None:
        diagnostics += _field(
            core_types.validate_value(variable.default, variable.to_spec(), _schemas_for(variable)),
            "default",
        )
    return diagnostics


@transaction.atomic
def variable_create(
    *,
    app: AgentApp,
    name: str,
    type: str,
    default: Any = None,
    description: str = "",
    item_type: str = "",
    schema: Schema | None = None,
) -> Variable:
    variable = Variable(
        app=app,
        name=name,
        type=type,
        default=default,
        description=description,
        item_type=item_type or "",
        schema=schema,
    )
    _raise_if(variable_problems(variable))
    _save(variable)
    return variable


@transaction.atomic
def variable_update(
    *,
    variable: Variable,
    name: str | None = None,
    type: str | None = None,
    default: Any = UNSET,
    description: str | None = None,
    item_type: str | None = None,
    schema: Schema | Any | None = UNSET,
    expected_version: int | None = None,
    update_references: bool = False,
) -> Variable:
    """Change a variable; a new name with `update_references` also rewrites every reference."""
    variable = _locked(Variable, variable.pk)
    _check_version(variable, expected_version)
    if name is not None and name != variable.name and update_references:
        variable = variable_rename(variable=variable, new_name=name)
    elif name is not None:
        variable.name = name
    if type is not None:
        variable.type = type
    if default is not UNSET:
        variable.default = default
    if description is not None:
        variable.description = description
    if item_type is not None:
        variable.item_type = item_type
    if schema is not UNSET:
        variable.schema = schema
    _raise_if(variable_problems(variable))
    _save(variable)
    return variable


@transaction.atomic
def variable_delete(*, variable: Variable) -> None:
    variable.delete()


# ---------------------------------------------------------------- tools


def tool_problems(tool: Tool) -> list[Diagnostic]:
    diagnostics = _name_diagnostics(tool.name)
    diagnostics += _unique(Tool, tool, what="tool")
    if tool.kind not in ToolKind.values:
        diagnostics.append(_error("kind", "Choose Python, OpenAPI or MCP.", "SC005"))
    if tool.kind == ToolKind.PYTHON and tool.python_code.strip():
        try:
            ast.parse(tool.python_code)
        except SyntaxError as exc:
            diagnostics.append(
                _error(
                    "python_code", f"Line {exc.lineno}: {exc.msg}. Fix the Python syntax.", "SC007"
                )
            )
    if tool.openapi_spec is not None and not isinstance(tool.openapi_spec, dict):
        diagnostics.append(
            _error("openapi_spec", "The OpenAPI document must be a JSON object.", "SC008")
        )
    if not isinstance(tool.mcp_headers, dict) or not all(
        isinstance(v, str) for v in tool.mcp_headers.values()
    ):
        diagnostics.append(
            _error(
                "mcp_headers",
                'Headers must be a JSON object of strings, e.g. {"X-Id": "abc"}.',
                "SC008",
            )
        )
    if not isinstance(tool.mock_state, dict):
        diagnostics.append(
            _error(
                "mock_state", 'Mock state must be a JSON object: {"variable_name": value}.', "SC008"
            )
        )
    for name in ("mock_state", "mock_response"):
        problem = not_json_data(getattr(tool, name), name)
        if problem is not None:  # NaN, infinity: JSON cannot carry it to the simulation's reader
            diagnostics.append(_error(name, f"Not JSON data: {problem.message}.", "SC209"))
    return diagnostics


_TOOL_FIELDS = (
    "kind",
    "description",
    "python_code",
    "openapi_spec",
    "mcp_url",
    "mcp_headers",
    "mock_enabled",
    "mock_state",
    "mock_response",
)


@transaction.atomic
def tool_create(*, app: AgentApp, name: str, kind: str = ToolKind.PYTHON, **fields: Any) -> Tool:
    unknown = set(fields) - set(_TOOL_FIELDS)
    if unknown:
        raise TypeError(f"tool_create() got unexpected fields {sorted(unknown)}")
    tool = Tool(app=app, name=name, kind=kind, **fields)
    _raise_if(tool_problems(tool))
    _save(tool)
    return tool


@transaction.atomic
def tool_update(
    *,
    tool: Tool,
    expected_version: int | None = None,
    update_references: bool = True,
    **fields: Any,
) -> Tool:
    """Change a tool; a new name renames its Python function too, and with
    `update_references` every `{@TOOL: …}` that names it."""
    unknown = set(fields) - {*_TOOL_FIELDS, "name"}
    if unknown:
        raise TypeError(f"tool_update() got unexpected fields {sorted(unknown)}")
    tool = _locked(Tool, tool.pk)
    _check_version(tool, expected_version)
    new_name = fields.pop("name", tool.name)
    for key, value in fields.items():
        setattr(tool, key, value)
    _raise_if(tool_problems(tool))
    _save(tool)
    if new_name != tool.name:
        tool = tool_rename(tool=tool, new_name=new_name, update_references=update_references)
    return tool


@transaction.atomic
def tool_delete(*, tool: Tool) -> None:
    tool.delete()


# ---------------------------------------------------------------- agents


def agent_problems(agent: Agent) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    name = agent.display_name.strip()
    if not name:
        diagnostics.append(_error("display_name", "Give the agent a display name.", "SC003"))
    elif (
        Agent.objects.filter(app_id=agent.app_id, display_name__iexact=name)
        .exclude(pk=agent.pk)
        .exists()
    ):
        diagnostics.append(
            _error("display_name", f"An agent named '{name}' already exists in this app.", "SC004")
        )
    elif "}" in name or "{" in name:
        diagnostics.append(
            _error("display_name", "A display name cannot contain braces { }.", "SC003")
        )
    return diagnostics


def _set_agent_links(
    agent: Agent, tools: Sequence[Tool] | None, children: Sequence[Agent] | None
) -> None:
    if tools is not None:
        if any(t.app_id != agent.app_id for t in tools):
            raise ServiceError([_error("tools", "A tool of another app cannot be attached.")])
        agent.tools.set(tools)
    if children is not None:
        if any(c.app_id != agent.app_id or c.pk == agent.pk for c in children):
            raise ServiceError(
                [_error("children", "Sub-agents must be other agents of the same app.")]
            )
        agent.children.set(children)
        if _has_cycle(agent):
            raise ServiceError(
                [_error("children", "That would make an agent its own sub-agent (a cycle).")]
            )


def _has_cycle(start: Agent) -> bool:
    edges: dict[int, list[int]] = {}
    for parent_id, child_id in Agent.children.through.objects.filter(
        from_agent__app_id=start.app_id
    ).values_list("from_agent_id", "to_agent_id"):
        edges.setdefault(parent_id, []).append(child_id)
    seen: set[int] = set()
    stack = list(edges.get(start.pk, []))
    while stack:
        node = stack.pop()
        if node == start.pk:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edges.get(node, []))
    return False


@transaction.atomic
def agent_create(
    *,
    app: AgentApp,
    display_name: str,
    instructions: str = "",
    description: str = "",
    is_root: bool | None = None,
    tools: Sequence[Tool] = (),
    children: Sequence[Agent] = (),
) -> Agent:
    if is_root is None:
        is_root = not app.agents.exists()
    agent = Agent(
        app=app,
        display_name=display_name.strip(),
        instructions=instructions,
        description=description,
        is_root=is_root,
    )
    _raise_if(agent_problems(agent))
    if is_root:
        app.agents.filter(is_root=True).update(is_root=False)
    _save(agent)
    _set_agent_links(agent, tools, children)
    return agent


@transaction.atomic
def agent_update(
    *,
    agent: Agent,
    display_name: str | None = None,
    instructions: str | None = None,
    description: str | None = None,
    is_root: bool | None = None,
    tools: Sequence[Tool] | None = None,
    children: Sequence[Agent] | None = None,
    expected_version: int | None = None,
) -> Agent:
    agent = _locked(Agent, agent.pk)
    _check_version(agent, expected_version)
    if display_name is not None and display_name.strip() != agent.display_name:
        agent = agent_rename(agent=agent, new_name=display_name)
    if instructions is not None:
        agent.instructions = instructions
    if description is not None:
        agent.description = description
    _raise_if(agent_problems(agent))
    if is_root:
        Agent.objects.filter(app_id=agent.app_id, is_root=True).exclude(pk=agent.pk).update(
            is_root=False
        )
        agent.is_root = True
    _save(agent)
    _set_agent_links(agent, tools, children)
    return agent


@transaction.atomic
def agent_save_instructions(
    *, agent: Agent, instructions: str, base_hash: str | None = None
) -> Agent:
    """Save an agent's instructions from the editor.

    `base_hash` fingerprints the text the editor started from: if the saved text has
    changed since (another editor, or a rename rewriting references), the save is
    refused, so nobody's words are silently overwritten. Other agent fields (tools,
    description) may change meanwhile without conflict.
    """
    agent = _locked(Agent, agent.pk)
    if base_hash is not None and base_hash != agent.instructions_hash:
        raise StaleObjectError(
            [
                _error(
                    "instructions",
                    "These instructions were changed elsewhere since you opened them (another "
                    "editor, or a rename that updated references). Copy your text, reload, "
                    "and apply your change again.",
                    "SC002",
                )
            ]
        )
    if instructions != agent.instructions:
        agent.instructions = instructions
        _save(agent)
    return agent


@transaction.atomic
def agent_delete(*, agent: Agent) -> None:
    if agent.is_root and agent.app.agents.exclude(pk=agent.pk).exists():
        raise ServiceError(
            [_error("__all__", "Make another agent the root before deleting the root agent.")]
        )
    agent.delete()


# ---------------------------------------------------------------- callbacks


def callback_problems(callback: Callback) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    if callback.kind not in CallbackKind.values:
        diagnostics.append(
            _error(
                "kind", "Choose when the callback runs: before/after agent, model or tool.", "SC005"
            )
        )
    if not callback.code.strip():
        diagnostics.append(_error("code", "The callback needs Python code.", "SC007"))
    else:
        try:
            ast.parse(callback.code)
        except SyntaxError as exc:
            diagnostics.append(
                _error("code", f"Line {exc.lineno}: {exc.msg}. Fix the Python syntax.", "SC007")
            )
    return diagnostics


@transaction.atomic
def callback_create(*, agent: Agent, kind: str, code: str, order: int | None = None) -> Callback:
    if order is None:
        last = agent.callbacks.filter(kind=kind).order_by("-order").first()
        order = 0 if last is None else last.order + 1
    callback = Callback(agent=agent, kind=kind, code=code, order=order)
    _raise_if(callback_problems(callback))
    _save(callback)
    return callback


@transaction.atomic
def callback_update(
    *,
    callback: Callback,
    code: str | None = None,
    kind: str | None = None,
    order: int | None = None,
    expected_version: int | None = None,
) -> Callback:
    callback = _locked(Callback, callback.pk)
    _check_version(callback, expected_version)
    if code is not None:
        callback.code = code
    if kind is not None:
        callback.kind = kind
    if order is not None:
        callback.order = order
    _raise_if(callback_problems(callback))
    _save(callback)
    return callback


@transaction.atomic
def callback_delete(*, callback: Callback) -> None:
    callback.delete()


# ---------------------------------------------------------------- duplicate


@transaction.atomic
def app_duplicate(*, app: AgentApp, owner: AbstractBaseUser, name: str | None = None) -> AgentApp:
    """A full copy of an app (schemas, variables, tools, agents, callbacks) owned by `owner`."""
    if name:
        _check_app_name_length(name)
    candidate, n = name or _app_name_with_suffix(app.name, " (copy)"), 2
    while AgentApp.objects.filter(owner=owner, name=candidate).exists():
        suffix = f" {n}" if name else f" (copy) {n}"
        candidate, n = _app_name_with_suffix(name or app.name, suffix), n + 1
    copy = AgentApp(owner=owner, name=candidate, description=app.description)
    _save(copy)
    schema_map: dict[int, Schema] = {}
    for schema in app.schemas.all():
        schema_map[schema.pk] = Schema.objects.create(
            app=copy,
            name=schema.name,
            description=schema.description,
            json_schema=schema.json_schema,
        )
    Variable.objects.bulk_create(
        Variable(
            app=copy,
            name=v.name,
            type=v.type,
            item_type=v.item_type,
            schema=schema_map.get(v.schema_id) if v.schema_id else None,
            default=v.default,
            description=v.description,
        )
        for v in app.variables.all()
    )
    tool_map: dict[int, Tool] = {}
    for tool in app.tools.all():
        old_pk = tool.pk
        tool.pk = None
        tool.id = None
        tool.app = copy
        tool.version = 1
        tool.save()
        tool_map[old_pk] = tool
    agent_map: dict[int, Agent] = {}
    originals = list(app.agents.prefetch_related("tools", "children", "callbacks"))
    for agent in originals:
        agent_map[agent.pk] = Agent.objects.create(
            app=copy,
            display_name=agent.display_name,
            description=agent.description,
            instructions=agent.instructions,
            is_root=agent.is_root,
        )
    for agent in originals:
        new = agent_map[agent.pk]
        new.tools.set([tool_map[t.pk] for t in agent.tools.all()])
        new.children.set([agent_map[c.pk] for c in agent.children.all()])
        Callback.objects.bulk_create(
            Callback(agent=new, kind=c.kind, order=c.order, code=c.code)
            for c in agent.callbacks.all()
        )
    return copy


# ---------------------------------------------------------------- renames


def _rename_in_expression(source: str, old: str, new: str) -> str:
    """Replace the variable `old` where it heads a path, leaving quoted strings alone."""
    pattern = re.compile(
        r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|(?<![\w.])" + re.escape(old) + r"(?!\w)"
    )
    return pattern.sub(lambda m: m.group(1) or new, source)


def rewrite_references(
    text: str,
    *,
    variable: tuple[str, str] | None = None,
    tool: tuple[str, str] | None = None,
    agent: tuple[str, str] | None = None,
) -> str:
    """Instructions with every reference to a renamed variable, tool or agent updated."""
    out: list[str] = []
    position = 0
    for token in parse_instructions(text).tokens:
        replacement = None
        if (
            variable
            and token.kind in (TokenKind.STATIC, TokenKind.DYNAMIC)
            and token.path[:1] == (variable[0],)
        ) or (variable and token.kind in (TokenKind.IF, TokenKind.ELIF)):
            replacement = _rename_in_expression(token.raw, *variable)
        elif tool and token.kind is TokenKind.TOOL and token.name == tool[0]:
            replacement = token.raw.replace(tool[0], tool[1], 1)
        elif agent and token.kind is TokenKind.AGENT and token.name == agent[0]:
            replacement = token.raw.replace(agent[0], agent[1], 1)
        if replacement is not None and replacement != token.raw:
            out.append(text[position : token.start])
            out.append(replacement)
            position = token.end
    out.append(text[position:])
    return "".join(out)


def _rename_in_json(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return re.sub(
            r"\$context\.variables\." + re.escape(old) + r"(?!\w)",
            f"$context.variables.{new}",
            value,
        )
    if isinstance(value, list):
        return [_rename_in_json(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _rename_in_json(v, old, new) for k, v in value.items()}
    return value


@transaction.atomic
def variable_rename(
    *, variable: Variable, new_name: str, expected_version: int | None = None
) -> Variable:
    """Rename a variable and every reference to it: instructions, tool headers, OpenAPI, mocks."""
    variable = _locked(Variable, variable.pk)
    _check_version(variable, expected_version)
    old = variable.name
    variable.name = new_name
    _raise_if(_name_diagnostics(new_name) + _unique(Variable, variable, what="variable"))
    _save(variable)
    for agent in Agent.objects.select_for_update().filter(app_id=variable.app_id):
        rewritten = rewrite_references(agent.instructions, variable=(old, new_name))
        if rewritten != agent.instructions:
            agent.instructions = rewritten
            _save(agent)
    for tool in Tool.objects.select_for_update().filter(app_id=variable.app_id):
        headers = _rename_in_json(tool.mcp_headers, old, new_name)
        openapi = _rename_in_json(tool.openapi_spec, old, new_name)
        mock_state = {(new_name if k == old else k): v for k, v in (tool.mock_state or {}).items()}
        if (headers, openapi, mock_state) != (tool.mcp_headers, tool.openapi_spec, tool.mock_state):
            tool.mcp_headers, tool.openapi_spec, tool.mock_state = headers, openapi, mock_state
            _save(tool)
    return variable


@transaction.atomic
def tool_rename(
    *,
    tool: Tool,
    new_name: str,
    expected_version: int | None = None,
    update_references: bool = True,
) -> Tool:
    """Rename a tool and its Python function (CX requires them equal) and, with
    `update_references`, every `{@TOOL: …}` reference."""
    tool = _locked(Tool, tool.pk)
    _check_version(tool, expected_version)
    old = tool.name
    tool.name = new_name
    _raise_if(_name_diagnostics(new_name) + _unique(Tool, tool, what="tool"))
    if tool.python_code:
        tool.python_code = re.sub(
            r"^(\s*def\s+)" + re.escape(old) + r"(\s*\()",
            rf"\g<1>{new_name}\g<2>",
            tool.python_code,
            flags=re.MULTILINE,
        )
    _save(tool)
    if not update_references:
        return tool
    for agent in Agent.objects.select_for_update().filter(app_id=tool.app_id):
        rewritten = rewrite_references(agent.instructions, tool=(old, new_name))
        if rewritten != agent.instructions:
            agent.instructions = rewritten
            _save(agent)
    return tool


@transaction.atomic
def agent_rename(*, agent: Agent, new_name: str, expected_version: int | None = None) -> Agent:
    """Rename an agent and every `{@AGENT: …}` reference to it."""
    agent = _locked(Agent, agent.pk)
    _check_version(agent, expected_version)
    old = agent.display_name
    agent.display_name = new_name.strip()
    _raise_if(agent_problems(agent))
    _save(agent)
    for other in Agent.objects.select_for_update().filter(app_id=agent.app_id):
        rewritten = rewrite_references(other.instructions, agent=(old, agent.display_name))
        if rewritten != other.instructions:
            other.instructions = rewritten
            _save(other)
    agent.refresh_from_db()
    return agent


# ---------------------------------------------------------------- scenarios


def _scenario_problems(scenario: Scenario) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    if not scenario.name.strip():
        diagnostics.append(_error("name", "Give the scenario a name.", "SC003"))
    elif (
        Scenario.objects.filter(agent_id=scenario.agent_id, name=scenario.name)
        .exclude(pk=scenario.pk)
        .exists()
    ):
        diagnostics.append(
            _error("name", f"This agent already has a scenario named '{scenario.name}'.", "SC004")
        )
    if scenario.token_budget is None or scenario.token_budget < 1:
        diagnostics.append(
            _error("token_budget", "The context window needs at least 1 token.", "SC009")
        )
    if scenario.channel not in Channel.values:
        diagnostics.append(
            _error("channel", f"Channel must be one of {', '.join(Channel.values)}.", "SC009")
        )
    if scenario.modality not in Modality.values:
        diagnostics.append(
            _error("modality", f"Modality must be one of {', '.join(Modality.values)}.", "SC009")
        )
    values = scenario.session_values
    if not isinstance(values, dict):
        diagnostics.append(
            _error(
                "session_values", 'Session values are one JSON object: {"name": value}.', "SC008"
            )
        )
        return diagnostics
    app = scenario.agent.app
    variables = {v.name: v for v in app.variables.select_related("schema")}
    schemas = _schema_map(app)
    for name, value in values.items():
        variable = variables.get(name)
        if variable is None:
            diagnostics.append(
                _error("session_values", f"'{name}' is not a declared variable.", "SC010")
            )
            continue
        for d in core_types.validate_value(value, variable.to_spec(), schemas):
            if d.severity is Severity.ERROR:
                diagnostics.append(_error("session_values", f"{name}: {d.message}", d.code))
    return diagnostics


@transaction.atomic
def scenario_save(
    *,
    agent: Agent,
    scenario: Scenario | None = None,
    name: str,
    steps_script: str = "",
    session_values: Any = None,
    channel: str = "web",
    modality: str = "text",
    session_id: str = "session-1",
    project_id: str = "my-project",
    project_number: str = "123456789",
    location: str = "us-central1",
    token_budget: int = 8000,
    use_mocks: bool = False,
    expected_version: int | None = None,
) -> Scenario:
    """Create (`scenario` None) or update a scenario; its steps come from the step script."""
    if scenario is None:
        scenario = Scenario(agent=agent)
    else:
        scenario = _locked(Scenario, scenario.pk)
        _check_version(scenario, expected_version)
    scenario.name = name.strip()
    scenario.session_values = {} if session_values is None else session_values
    scenario.channel, scenario.modality = channel, modality
    scenario.session_id, scenario.project_id = session_id, project_id
    scenario.project_number, scenario.location = project_number, location
    scenario.token_budget, scenario.use_mocks = token_budget, use_mocks
    parsed = parse_script(steps_script)
    diagnostics = _scenario_problems(scenario)
    diagnostics += _field(parsed.diagnostics, "steps_script")
    _raise_if(diagnostics)
    _save(scenario)
    scenario.steps.all().delete()
    ScenarioStep.objects.bulk_create(
        ScenarioStep(
            scenario=scenario,
            order=i,
            kind=step.kind.value,
            text=step.text,
            tool=step.tool,
            args=step.args,
            callback_kind=step.callback.value if step.callback else "",
        )
        for i, step in enumerate(parsed.steps)
    )
    return scenario


@transaction.atomic
def scenario_delete(*, scenario: Scenario) -> None:
    scenario.delete()
