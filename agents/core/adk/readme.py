"""The README.md of an exported ADK package: how to run it, what it needs, what differs."""

from __future__ import annotations

from collections.abc import Mapping

from agents.core.spec import AgentSpec, AppSpec

DIFFERENCES = """\
## What differs from CX Agent Studio (and from Statecraft's simulation)

The tool and callback code is the app's, unchanged; the runtime adapter
(`statecraft_runtime/runtime.py`) gives it CX's globals and signatures. What ADK does
differently, and what the adapter does about it:

- **Instructions** are compiled before every model call by an instruction provider
  (Statecraft's own compiler, `statecraft_runtime/compile.py`): `{{x}}` substituted from
  the session state, `{% if %}` blocks chosen (channel and modality from the session keys
  `_statecraft_channel` / `_statecraft_modality`, default `web` / `text`). `{x}` (a dynamic
  reference) stays as written, as in CX: ADK does not substitute state into an instruction
  provider's text. ADK appends its own note on `transfer_to_agent` ("You are an agent. Your
  internal name is…") to the instructions of an agent with sub-agents or a parent.
- **`<state_update>name: value</state_update>`**: before every model call the adapter
  rebuilds the history the model receives from the session's events, with one such user
  message per change of a declared variable, placed before the event that made it — except
  a function call's updates (its tool callbacks', the tool's), which come right after its
  response: a function call is followed at once by its responses, as Gemini and OpenAI
  require and ADK's own contents have it; a call whose tool raised (no response) is left
  out of the later requests, as ADK leaves it out. ADK keeps one value per variable per
  event, so two writes of one variable in one tool call give one update (CX and
  Statecraft give two).
  Model callbacks read `llm_request.contents` without these entries (messages, calls and
  responses: the user's message is the last content of a turn's first model call); the
  model's request has them. A callback's edits of the contents do not reach the model;
  the system instruction it sets and the tools it hides (`config.hide_tool`) do, as in
  Statecraft's simulation (a call of a hidden tool still runs: ADK's tool table has it).
  The whole history is sent: Statecraft's simulated context window (its token budget)
  does not apply.
- **Defaults**: the first `before_agent` callback of a session writes the declared
  defaults (`variables.json`) of the variables the session does not set, and records in
  `_statecraft_session` which session values differ from them (their state updates open
  the history). Pass the scenario's session values as the session's initial state
  (`adk eval` does, from the evalset's `session_input.state`).
- **Writes are not checked**: ADK does not check a written value against the variable's
  type or schema (Statecraft refuses it, SC409); the schemas are in `schemas/` as JSON
  Schema for your own checks. Removing a variable (`del`, `pop`, `remove_variable`) writes
  `None`.
- **Agent names** are Python identifiers (ADK's rule): a display name like `Shopping
  Assistant` becomes `Shopping_Assistant`, and `transfer_to_agent` takes that name.
- **The session clock** of a scenario (`now`) is not exported: the code reads the real
  clock.
- **Mocks**: a tool without code runs its Statecraft mock (its state writes and response);
  a Python tool with code always runs its code. A CX platform tool (`end_session`…)
  answers `{}`; `end_session` also ends the invocation (ADK calls the model no more), as
  CX ends the conversation — a later message to the same session starts a new one.
  OpenAPI and MCP tools make real HTTP calls, named as CX calls them: an
  OpenAPI tool is ADK's `RestApiTool` of its operation under the tool's name (not the
  snake_case of its operationId), its `x-ces-session-context` parameters hidden from the
  model and filled from the session (left out without a value); ADK refuses private and
  loopback hosts unless `STATECRAFT_ADK_ALLOW_PRIVATE_NETWORK=1`. An MCP tool is ADK's
  `McpToolset` filtered to the server's tool and renamed (`Named`). An MCP header that is
  not a `$context` template is never exported (it may be a secret): the package reads it
  from an environment variable (see `agent.py`).
- **A turn ends at the first text answer**: ADK calls the model again after every tool
  response until it answers in text; a callback that answers in text ends the turn.
- **A transfer ADK refuses** (`transfer_to_agent` naming the agent itself, an agent the
  app does not have, or one that is not its sub-agent, parent or peer) ends the turn with
  ADK's error; Statecraft's simulation reports it (SC417), leaves the session with the
  agent and goes on with the turn.
- **`context.events`** are the session's events with their real authors (each agent's
  own name), not the current agent's.
- **Another agent's events** (its messages, calls and responses, before a transfer) reach
  the current agent's model and model callbacks as user text in `<context>` (`[agent]
  said: …`, `[agent] called tool …`), as Statecraft's simulation relays them, in place of
  ADK's own "For context:" wording.
"""


def package_readme(
    app: AppSpec,
    package: str,
    names: Mapping[str, str],
    root: AgentSpec,
    eval_files: list[str],
) -> str:
    evalsets = [f for f in eval_files if f.endswith(".evalset.json")]
    lines = [
        f"# {app.name} — an ADK agent exported by Statecraft",
        "",
        (app.description or "").strip(),
        "",
        f"`{package}/agent.py` defines `root_agent` (`{names[root.name]}`), an ADK `LlmAgent`",
        "tree: each agent's instructions, tools, sub-agents and callbacks as designed in",
        "Statecraft. Tool and callback code written for CX Agent Studio runs unchanged.",
        "",
        "## What it needs",
        "",
        # google-adk's own minimum (its Requires-Python); the shipped code needs 3.11 too
        # (enum.StrEnum in the compiler's modules).
        "- Python 3.11 or newer and `pip install google-adk` (it brings `google-genai`);",
        "  nothing of Statecraft or Django."
        + (
            " The MCP tools need `pip install mcp` too."
            if any(t.kind.value == "mcp" for t in app.tools)
            else ""
        ),
        '- `adk eval` needs `pip install "google-adk[eval]"`.',
        "- A model: the agents use the model the app's CX settings name, else `gemini-2.5-flash`;",
        "  set `STATECRAFT_ADK_MODEL` to use another. For Gemini set `GOOGLE_API_KEY` (or",
        "  `GOOGLE_GENAI_USE_VERTEXAI=TRUE` with `GOOGLE_CLOUD_PROJECT` and",
        "  `GOOGLE_CLOUD_LOCATION`). Another provider goes through ADK's LiteLLM model",
        "  (`pip install litellm`, then e.g. `STATECRAFT_ADK_MODEL=openai/gpt-4o` with",
        "  `OPENAI_API_KEY`, and `OPENAI_API_BASE` for an OpenAI-compatible server).",
        "",
        "## How to run it",
        "",
        "From the folder that holds this package:",
        "",
        "```sh",
        f"adk run {package}        # a conversation in the terminal",
        "adk web                  # the dev UI on http://127.0.0.1:8000, pick " + package,
        "```",
        "",
    ]
    if evalsets:
        lines += [
            "## Goldens as evalsets",
            "",
            "Each Statecraft scenario with expectations is an evalset in `evals/`; the",
            "criteria are in `evals/test_config.json` (the expected tool calls, in order, with",
            "their arguments; other calls allowed — Statecraft's rule). Run one with:",
            "",
            "```sh",
            f"adk eval {package} {package}/evals/{evalsets[0]} \\",
            f"    --config_file_path {package}/evals/test_config.json",
            "```",
            "",
            "A scripted reply (`agent:` / `expect agent:`) is the evalset's final response;",
            "Statecraft judges replies only with a model, so `test_config.json` sets no",
            "response criterion (add `final_response_match_v2` to judge them). `expect state`",
            "lines are the eval case's `final_session_state`, which ADK's evaluators do not",
            "check.",
            "",
        ]
    lines += [
        "## Files",
        "",
        "- `agent.py` — the agent tree; `variables.json` — the declared variables;",
        "- `instructions/`, `tools/`, `callbacks/` — the app's texts and code, as written;",
        "- `schemas/` — each custom-object schema as JSON Schema;",
        "- `statecraft_runtime/` — the runtime adapter and Statecraft's instruction compiler;",
        "- `evals/` — the evalsets and their `test_config.json`.",
        "",
        DIFFERENCES,
    ]
    return "\n".join(lines)
