"""The designer's pages and their HTMX fragments, one module per pane (function views; one
URL, page or fragment). `designer/urls.py` routes to the names exported here and to the
modules `jobs` (Run all, Run live and Replay), `exchange`, `versions` and `accounts`; the
view-models the templates draw are `preview`, `conversation` and `run_all`; the shared
plumbing (loading the app, the inline form's life, fragment answers) is in `common`."""

from designer.views.agents import agent_delete, agent_edit, agent_new
from designer.views.apps import (
    app_create,
    app_delete,
    app_duplicate,
    app_history,
    app_list,
    app_share,
)
from designer.views.callbacks import callback_delete, callback_edit, callback_new
from designer.views.instructions import agent_instructions
from designer.views.page import (
    agent_preview,
    agent_tools_line,
    app_designer,
    variable_usage_counts,
)
from designer.views.scenarios import (
    agent_simulate,
    live_run_golden,
    scenario_delete,
    scenario_edit,
    scenario_new,
    scenario_pin,
)
from designer.views.schemas import schema_delete, schema_edit, schema_example, schema_new
from designer.views.site import favicon, healthz
from designer.views.tools import tool_delete, tool_edit, tool_new
from designer.views.variables import (
    variable_default_check,
    variable_default_field,
    variable_delete,
    variable_edit,
    variable_new,
    variable_usage,
)

__all__ = [
    "agent_delete",
    "agent_edit",
    "agent_instructions",
    "agent_new",
    "agent_preview",
    "agent_simulate",
    "agent_tools_line",
    "app_create",
    "app_delete",
    "app_designer",
    "app_duplicate",
    "app_history",
    "app_list",
    "app_share",
    "callback_delete",
    "callback_edit",
    "callback_new",
    "favicon",
    "healthz",
    "live_run_golden",
    "scenario_delete",
    "scenario_edit",
    "scenario_new",
    "scenario_pin",
    "schema_delete",
    "schema_edit",
    "schema_example",
    "schema_new",
    "tool_delete",
    "tool_edit",
    "tool_new",
    "variable_default_check",
    "variable_default_field",
    "variable_delete",
    "variable_edit",
    "variable_new",
    "variable_usage",
    "variable_usage_counts",
]
