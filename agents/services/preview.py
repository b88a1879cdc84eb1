"""Preview an agent: its instructions compiled with session values, and their problems.

One function for the designer's live preview and the API's compile endpoint, so the
two cannot drift: the same checks of the values, the channel and the modality, the
same diagnostics. Adapters parse their request into typed values and render the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agents import selectors
from agents.core import rules
from agents.core.compile import Span, compile_instructions
from agents.core.diagnostics import Diagnostic, Severity
from agents.core.lint import lint_edited_agent, merge_diagnostics
from agents.core.spec import AppSpec
from agents.models import Agent, AgentApp


@dataclass(frozen=True)
class AgentPreview:
    """What the model would receive, and what is wrong with the instructions or the input.

    `input_problems` concern the request (a value that does not fit its variable, an
    unknown channel): the preview is compiled without the refused values (their
    defaults stand), the API answers 400 with them, the designer shows them by the inputs.
    """

    spec: AppSpec
    agent_name: str
    instructions: str
    text: str
    spans: tuple[Span, ...]
    diagnostics: tuple[Diagnostic, ...]
    input_problems: tuple[Diagnostic, ...]
    values: Mapping[str, Any]
    channel: str
    modality: str

    @property
    def counts(self) -> dict[str, int]:
        return {str(s): sum(1 for d in self.diagnostics if d.severity is s) for s in Severity}


def preview_agent(
    *,
    app: AgentApp,
    agent: Agent,
    instructions: str | None = None,
    values: Mapping[str, Any] | None = None,
    channel: str = rules.SCENARIO_DEFAULTS["channel"],
    modality: str = rules.SCENARIO_DEFAULTS["modality"],
) -> AgentPreview:
    """Compile `instructions` (default: the saved ones) with the defaults overridden by
    `values` (typed; None removes a value), for `channel` and `modality`."""
    spec = selectors.app_spec(app)
    text = agent.instructions if instructions is None else instructions
    given = dict(values or {})
    problems = rules.channel_problems(channel) + rules.modality_problems(modality)
    value_problems = rules.session_values_problems(
        {k: v for k, v in given.items() if v is not None}, spec, field="values"
    )
    refused = {d.subject for d in value_problems}
    problems += [replace(d, field=f"values.{d.subject}") for d in value_problems]
    accepted = {k: v for k, v in given.items() if k not in refused and spec.variable(k)}
    compiled = compile_instructions(
        text,
        {**spec.default_values(), **accepted},
        channel=channel if channel in rules.CHANNELS else rules.SCENARIO_DEFAULTS["channel"],
        modality=modality if modality in rules.MODALITIES else rules.SCENARIO_DEFAULTS["modality"],
    )
    diagnostics = merge_diagnostics(
        lint_edited_agent(spec, agent.display_name, text), compiled.diagnostics
    )
    return AgentPreview(
        spec=spec,
        agent_name=agent.display_name,
        instructions=text,
        text=compiled.text,
        spans=compiled.spans,
        diagnostics=tuple(diagnostics),
        input_problems=tuple(problems),
        values={**spec.default_values(), **accepted},
        channel=channel,
        modality=modality,
    )
