"""Who uses a variable (`agents.core.usage`): the one analysis the designer's badge and lint's
"never used" (SC311) read, so they cannot disagree."""

from __future__ import annotations

from agents.core.lint import lint_app
from agents.core.rules import sub_agent_cycle
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ToolKind,
    ToolMock,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from agents.core.usage import UseKind, unused_variables, variable_uses


def _text(name: str) -> VariableSpec:
    return VariableSpec(name, VariableType.TEXT, description=name)


def _never_used(app: AppSpec) -> set[str]:
    return {d.subject for d in lint_app(app) if d.code == "SC311"}


READS = 'def Lookup():\n    """Look up."""\n    return {"who": context.state.get("account")}\n'


def test_a_variable_read_only_by_tool_code_is_used():
    # The badge said "unused" while lint said used: both read this now.
    app = AppSpec(
        name="a",
        variables=(_text("account"),),
        tools=(ToolSpec("Lookup", ToolKind.PYTHON, python_code=READS, description="d"),),
        agents=(AgentSpec("Root", "Use {@TOOL: Lookup}.", tools=("Lookup",), is_root=True),),
    )
    uses = variable_uses(app)["account"]
    assert [(u.kind, u.field, u.owner, u.line) for u in uses] == [
        (UseKind.READ, "tools.Lookup.python_code", "Lookup", 3)
    ]
    assert unused_variables(app) == ()
    assert _never_used(app) == set()


def test_a_context_variable_is_a_use_of_that_name_only_not_of_a_prefix():
    # `$context.variables.user_id` counted as a use of `user` in the badge.
    app = AppSpec(
        name="a",
        variables=(_text("user"), _text("user_id")),
        tools=(
            ToolSpec(
                "Remote",
                ToolKind.MCP,
                description="d",
                mcp_url="https://example.com/mcp",
                mcp_headers=(("X-User", "$context.variables.user_id"),),
            ),
        ),
        agents=(AgentSpec("Root", "Hello.", tools=("Remote",), is_root=True),),
    )
    uses = variable_uses(app)
    assert uses["user"] == []
    assert [(u.kind, u.field, u.detail) for u in uses["user_id"]] == [
        (UseKind.CONTEXT, "tools.Remote.mcp_headers.X-User", "X-User")
    ]
    assert unused_variables(app) == ("user",)
    assert _never_used(app) == {"user"}


def test_every_kind_of_use_with_where_it_is():
    app = AppSpec(
        name="a",
        variables=tuple(_text(n) for n in ("s", "d", "c", "w", "m", "o", "idle")),
        tools=(
            ToolSpec(
                "Api",
                ToolKind.OPENAPI,
                description="d",
                openapi={
                    "paths": {
                        "/x": {
                            "get": {
                                "parameters": [
                                    {
                                        "name": "o",
                                        "in": "header",
                                        "x-ces-session-context": ("$context.variables.o"),
                                    }
                                ]
                            }
                        }
                    }
                },
            ),
            ToolSpec("Mocked", ToolKind.PYTHON, description="d", mock=ToolMock(state={"m": "1"})),
        ),
        agents=(
            AgentSpec(
                "Root",
                "{{s}} {d} {% if c %}x{% endif %} {% elif s %}",
                is_root=True,
                callbacks=(
                    CallbackSpec(
                        CallbackKind.BEFORE_MODEL,
                        'def before_model_callback(llm_request):\n    context.state["w"] = 1\n',
                    ),
                ),
            ),
        ),
    )
    uses = variable_uses(app)
    assert [(u.kind, u.start) for u in uses["s"]] == [(UseKind.STATIC, 0)]  # a stray elif is text
    assert [(u.kind, u.start) for u in uses["d"]] == [(UseKind.DYNAMIC, 6)]
    assert [u.kind for u in uses["c"]] == [UseKind.CONDITION]
    assert [(u.kind, u.field, u.callback) for u in uses["w"]] == [
        (UseKind.WRITE, "agents.Root.callbacks.0.code", CallbackKind.BEFORE_MODEL)
    ]
    assert [(u.kind, u.field) for u in uses["m"]] == [(UseKind.WRITE, "tools.Mocked.mock.state")]
    assert [(u.kind, u.detail) for u in uses["o"]] == [
        (UseKind.CONTEXT, "paths./x.get.parameters.0.x-ces-session-context")
    ]
    assert unused_variables(app) == ("idle",)
    assert _never_used(app) == {"idle"}


def test_all_of_context_variables_uses_every_variable():
    app = AppSpec(
        name="a",
        variables=(_text("a"), _text("b")),
        tools=(
            ToolSpec(
                "Remote",
                ToolKind.MCP,
                description="d",
                mcp_url="https://example.com/mcp",
                mcp_headers=(("X-State", "$context.variables"),),
            ),
        ),
        agents=(AgentSpec("Root", "Hello.", tools=("Remote",), is_root=True),),
    )
    assert {name: len(found) for name, found in variable_uses(app).items()} == {"a": 1, "b": 1}
    assert _never_used(app) == set()


def test_the_one_sub_agent_cycle_check():
    assert sub_agent_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    assert sub_agent_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert sub_agent_cycle({"a": ["a"]}) is None  # its own sub-agent: reported on its own
    assert sub_agent_cycle({"a": ["ghost"]}) is None  # unknown: reported on its own
    assert sub_agent_cycle({1: [2], 2: [1]}) == [1, 2, 1]  # the database's ids
