"""Every user action on the domain: one function each, called by the designer, the API, the
admin and the management commands alike (keyword-only, atomic, validated with the core's
rule set, taking the acting user and leaving an audit record).

Modules by entity: `apps`, `schemas`, `variables`, `tools`, `agents` (and callbacks),
`scenarios`; the computed actions `preview` (preview an agent), `sandbox_door` (simulate a
scenario: the one door to the sandbox) and `evaluation` (check goldens, Run all); the live
runs by use case (`live_jobs`, `live_runs`, `live_replays`, `live_recording`,
`live_goldens`, `live_user_scenarios`, `live_models`, `live_pins`: the recording a scenario's
replays use); `jobs` and `job_kinds` (long work);
`common` holds refusals, locking and the audit record (docs/architecture.md).
"""

from agents.services.accounts import (
    api_token_create,
    api_token_revoke,
    user_collapsed,
    user_collapsed_set,
    user_language_set,
)
from agents.services.agents import (
    agent_create,
    agent_delete,
    agent_problems,
    agent_rename,
    agent_save_instructions,
    agent_update,
    callback_create,
    callback_delete,
    callback_problems,
    callback_update,
)
from agents.services.apps import (
    app_create,
    app_create_from_spec,
    app_delete,
    app_duplicate,
    app_share,
    app_share_by_username,
    app_unshare,
    app_update,
    free_name,
)
from agents.services.common import CODES, UNSET, ServiceError, StaleObjectError
from agents.services.evaluation import (
    ScenarioRun,
    app_evaluate,
    scenario_evaluate,
    scenario_result_record,
    scenario_run,
    summarise,
)
from agents.services.preview import AgentPreview, preview_agent
from agents.services.sandbox_door import simulate_scenario, with_instructions
from agents.services.scenarios import scenario_delete, scenario_save, scenario_script
from agents.services.schemas import schema_create, schema_delete, schema_problems, schema_update
from agents.services.tools import tool_create, tool_delete, tool_problems, tool_rename, tool_update
from agents.services.variables import (
    variable_create,
    variable_delete,
    variable_problems,
    variable_rename,
    variable_update,
)

__all__ = [
    "CODES",
    "UNSET",
    "AgentPreview",
    "ScenarioRun",
    "ServiceError",
    "StaleObjectError",
    "agent_create",
    "agent_delete",
    "agent_problems",
    "agent_rename",
    "agent_save_instructions",
    "agent_update",
    "api_token_create",
    "api_token_revoke",
    "app_create",
    "app_create_from_spec",
    "app_delete",
    "app_duplicate",
    "app_evaluate",
    "app_share",
    "app_share_by_username",
    "app_unshare",
    "app_update",
    "callback_create",
    "callback_delete",
    "callback_problems",
    "callback_update",
    "free_name",
    "preview_agent",
    "scenario_delete",
    "scenario_evaluate",
    "scenario_result_record",
    "scenario_run",
    "scenario_save",
    "scenario_script",
    "schema_create",
    "schema_delete",
    "schema_problems",
    "schema_update",
    "simulate_scenario",
    "summarise",
    "tool_create",
    "tool_delete",
    "tool_problems",
    "tool_rename",
    "tool_update",
    "user_collapsed",
    "user_collapsed_set",
    "user_language_set",
    "variable_create",
    "variable_delete",
    "variable_problems",
    "variable_rename",
    "variable_update",
    "with_instructions",
]
