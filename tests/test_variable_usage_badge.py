"""The designer's usage badge reads the core's one usage analysis (`agents.core.usage`), so it
says what lint says: used when tool code reads the variable, and a header's
`$context.variables.user_id` is a use of `user_id`, not of `user`."""

from __future__ import annotations

import re

from agents import services
from agents.core.spec import AgentSpec, AppSpec, ToolKind, ToolSpec, VariableSpec, VariableType

READS = 'def Lookup():\n    """Look up."""\n    return {"who": context.state.get("account")}\n'


def test_the_badge_counts_code_reads_and_whole_context_names(client, user):
    spec = AppSpec(
        name="Usage",
        variables=tuple(
            VariableSpec(n, VariableType.TEXT, description=n)
            for n in ("account", "user", "user_id")
        ),
        tools=(
            ToolSpec("Lookup", ToolKind.PYTHON, python_code=READS, description="Look up."),
            ToolSpec(
                "Remote",
                ToolKind.MCP,
                description="Remote.",
                mcp_url="https://example.com/mcp",
                mcp_headers=(("X-User", "$context.variables.user_id"),),
            ),
        ),
        agents=(
            AgentSpec(
                "Root",
                "Use {@TOOL: Lookup} and {@TOOL: Remote}.",
                tools=("Lookup", "Remote"),
                is_root=True,
            ),
        ),
    )
    app = services.app_create_from_spec(owner=user, spec=spec, name="Usage")
    client.force_login(user)
    usage = {
        v.name: client.get(
            f"/apps/{app.pk}/variables/{v.pk}/usage", HTTP_HX_REQUEST="true"
        ).content.decode()
        for v in app.variables.all()
    }
    assert re.search(r"read by</dt><dd>[^<]*Lookup", usage["account"])  # the code that reads it
    assert "Not referenced" in usage["user"]
    assert "Remote: X-User" in usage["user_id"]
    page = client.get(f"/apps/{app.pk}/").content.decode()
    badges = re.findall(r'class="usage-link"[^>]*>([^<]+)</a>', page)
    assert sorted(b.strip() for b in badges) == ["unused", "used 1\u00d7", "used 1\u00d7"]
