"""A whole run: turns (start, steps, end with the window's slide and its warnings) and the
session from first step to result.
"""

from __future__ import annotations

from dataclasses import replace

from agents.core.compile import compile_instructions
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.simulation.model_calls import ModelCalls
from agents.core.simulation.results import TRANSFER_TOOL, SimulationResult, TurnResult
from agents.core.simulation.values import (
    Writer,
    copy_tree,
    no_parameter_arguments,
    response_parts,
    same_value,
    state_update_text,
)
from agents.core.spec import CallbackKind, ExpectKind, StepKind, StepSpec
from agents.core.tokens import estimate_tokens


class Run(ModelCalls):
    """One simulation of a scenario (``agents.core.simulate.simulate``)."""

    def start_turn(self, first_step: StepSpec) -> None:
        self.turn += 1
        self.turn_ended = None
        self.turn_answered = None
        self.skipped_steps = 0
        self.loop_pending = False
        self.model_done = None
        self.unused_answers = 0
        self.turn_start_event = len(self.events)
        self.turn_start_state = dict(self.state)
        self.turn_http = []
        if self.turn == 0:
            for name, value in self.session_updates:
                self.add_event(
                    "state_update",
                    state_update_text(name, value),
                    source="session",
                    variable=name,
                    value=value,
                )
        if first_step.kind is StepKind.USER:
            if first_step.variables:
                writer = Writer("session", Message("the session input"), "session")
                writes = tuple((k, copy_tree(v)) for k, v in first_step.variables.items())
                self.apply_writes(writer, writes, ())
            if first_step.text or first_step.event:
                self.add_event("user", first_step.text or f"<event>{first_step.event}</event>")
        returned, value = self.run_callbacks(CallbackKind.BEFORE_AGENT, {})
        parts = response_parts(value) if returned else None
        if parts is not None and self.turn_ended is None:
            # ADK: content from before_agent is the agent's answer and ends the invocation;
            # the model is not called and after_agent does not run.
            self.agent_says(parts, "before_agent_callback")
            self.turn_answered = "before_agent_callback"

    def run_step(self, step: StepSpec) -> None:
        kind = step.kind
        if (self.turn_ended or self.turn_answered) is not None and kind is not StepKind.USER:
            self.skipped_steps += 1
            return
        if kind is StepKind.USER:
            self.add_event("user", step.text)
        elif kind is StepKind.AGENT:
            self.scripted_answer(({"text": step.text},))
        elif kind is StepKind.TOOL:
            self.scripted_answer(({"function_call": {"name": step.tool, "args": dict(step.args)}},))
        elif kind is StepKind.EXPECT and step.expectation is not None:
            expected = step.expectation
            if expected.kind is ExpectKind.CALL:
                args = expected.value
                if not isinstance(args, dict):
                    # No arguments listed: run it when the tool has nothing to choose.
                    args = no_parameter_arguments(self.app, expected.tool)
                if args is not None:
                    self.run_step(StepSpec(StepKind.TOOL, tool=expected.tool, args=args))
            elif expected.kind is ExpectKind.AGENT:
                self.scripted_answer(({"text": str(expected.value or "")},))
            elif expected.kind is ExpectKind.TRANSFER:
                call = {"name": TRANSFER_TOOL, "args": {"agent_name": expected.agent}}
                self.scripted_answer(({"function_call": call},))
            elif expected.kind is ExpectKind.MOCK:
                self.step_mocks[expected.tool] = copy_tree(expected.value)
        elif kind is StepKind.CALLBACK:
            callback_kind = step.callback
            if callback_kind is None or not any(
                c.kind == callback_kind for c in self.agent.callbacks
            ):
                self.step_error(
                    "SC412",
                    Message(
                        "This callback step has no %(kind)s callback on %(agent)s.",
                        kind=callback_kind.value,
                        agent=self.agent.name,
                    )
                    if callback_kind
                    else Message("This callback step has no callback kind."),
                    source=callback_kind.value if callback_kind else "",
                    subject=self.agent.name,
                    severity=Severity.WARNING,
                )
                return
            self.run_callbacks(callback_kind, step.args)

    def end_turn(self) -> None:
        self.step_index = None  # the end of the turn (the timeline puts it after the steps)
        self.finish_model_loop()
        if self.model_done is not None and self.unused_answers:
            self.diagnostics.append(
                Diagnostic(
                    "SC420",
                    Severity.INFO,
                    Message(
                        "The %(model_done)s answered turn %(turn)s with text in the "
                        "model's place: ADK's turn ends with that answer, so "
                        "%(unused_answers)s scripted model answer(s) of the turn were "
                        "not used.",
                        model_done=self.model_done,
                        turn=self.turn,
                        unused_answers=self.unused_answers,
                    ),
                    subject=self.agent.name,
                )
            )
        if self.session_ended == self.turn:
            self.diagnostics.append(
                Diagnostic(
                    "SC423",
                    Severity.INFO,
                    Message(
                        "end_session ran in turn %(turn)s: CX ends the conversation there; "
                        "the model was not called again, and %(skipped)s later scripted "
                        "answer(s) of the turn and %(turns)s later turn(s) were not run.",
                        turn=self.turn,
                        skipped=self.skipped_after_end,
                        turns=self.turns_after_end,
                    ),
                    subject=self.agent.name,
                )
            )
        if self.turn_answered is not None:
            if self.skipped_steps:
                self.diagnostics.append(
                    Diagnostic(
                        "SC416",
                        Severity.INFO,
                        (
                            Message(
                                "The %(turn_answered)s answered in turn %(turn)s: its "
                                "later step and the after_agent callbacks did not run "
                                "(the runtime ends the turn with that answer).",
                                turn_answered=self.turn_answered,
                                turn=self.turn,
                            )
                            if self.skipped_steps == 1
                            else Message(
                                "The %(turn_answered)s answered in turn %(turn)s: its "
                                "%(skipped_steps)s later steps and the after_agent "
                                "callbacks did not run (the runtime ends the turn with "
                                "that answer).",
                                turn_answered=self.turn_answered,
                                turn=self.turn,
                                skipped_steps=self.skipped_steps,
                            )
                        ),
                        subject=self.agent.name,
                    )
                )
        elif self.turn_ended is None:
            # After a transfer, only the agent that ends the turn runs its after_agent
            # callbacks (ADK's runner: the agent that transferred does not).
            returned, value = self.run_callbacks(CallbackKind.AFTER_AGENT, {})
            parts = response_parts(value) if returned else None
            if parts is not None and self.turn_ended is None:
                self.agent_says(parts, "after_agent_callback")  # ADK adds it as an event
        else:
            # One whole sentence per case (the catalog has no plurals, and a fragment
            # spliced into a sentence cannot be translated).
            if not self.skipped_steps:
                message = Message(
                    "%(turn_ended)s raised in turn %(turn)s: the after_agent callbacks of "
                    "that turn did not run (the runtime ends the turn).",
                    turn_ended=self.turn_ended,
                    turn=self.turn,
                )
            elif self.skipped_steps == 1:
                message = Message(
                    "%(turn_ended)s raised in turn %(turn)s: 1 later step and the "
                    "after_agent callbacks of that turn did not run (the runtime ends the "
                    "turn).",
                    turn_ended=self.turn_ended,
                    turn=self.turn,
                )
            else:
                message = Message(
                    "%(turn_ended)s raised in turn %(turn)s: %(skipped_steps)s later steps "
                    "and the after_agent callbacks of that turn did not run (the runtime "
                    "ends the turn).",
                    turn_ended=self.turn_ended,
                    turn=self.turn,
                    skipped_steps=self.skipped_steps,
                )
            self.diagnostics.append(
                Diagnostic("SC415", Severity.INFO, message, subject=self.agent.name)
            )
        turn = self.turn
        dropped, warnings = self.slide_window(turn)
        self.diagnostics.extend(warnings)
        visible = tuple(
            i for i in range(self.window_start, len(self.events)) if self.events[i].model_visible
        )
        changed: list[str] = []
        seen: set[str] = set()
        for event in self.events[self.turn_start_event :]:
            name = event.variable
            if event.kind != "state_update" or name is None or name in seen:
                continue
            seen.add(name)
            if not same_value(self.turn_start_state.get(name), self.state.get(name)):
                changed.append(name)
        self.turns.append(
            TurnResult(
                index=turn,
                events=tuple(range(self.turn_start_event, len(self.events))),
                state_after=dict(self.state),  # values shared: never changed in place
                changed=tuple(changed),
                builtins=self.builtins(),
                model_input=visible,
                tokens_used=self.instruction_tokens + self.window_tokens,
                dropped=tuple(dropped),
                warnings=tuple(warnings),
                http=tuple(self.turn_http),
                instructions=self.latest_instructions,
            )
        )

    def run(self) -> SimulationResult:
        self.start_session()
        compiled = compile_instructions(
            self.agent.instructions,
            self.state,
            channel=self.session.channel,
            modality=self.session.modality,
        )
        instructions = compiled.text
        self.latest_instructions = instructions
        self.instruction_tokens = estimate_tokens(instructions)
        self.available = self.scenario.token_budget - self.instruction_tokens
        self.dynamic = tuple(
            dict.fromkeys(
                span.name.split(".")[0] for span in compiled.spans if span.kind == "dynamic"
            )
        )
        live_step: int | None = None  # a live run: the USER step of the turn
        steps = self.scenario.steps
        for index, step in enumerate(steps):
            if self.turn < 0 or step.kind is StepKind.USER:
                if self.turn >= 0:
                    self.live_turn(live_step)
                    if self.session_ended is not None:
                        self.turns_after_end = sum(
                            1 for s in steps[index:] if s.kind is StepKind.USER
                        )
                    self.end_turn()
                    if self.live_stopped:
                        self.live_run_stopped()
                        break
                    if self.session_ended is not None:
                        break  # CX's end_session ended the conversation
                self.step_index = index
                live_step = index if step.kind is StepKind.USER else None
                self.start_turn(step)
                if step.kind is StepKind.USER:
                    continue
            self.step_index = index
            if self.model is None:
                self.run_step(step)
            elif step.expectation is not None and step.expectation.kind is ExpectKind.MOCK:
                # Live: scripted calls and replies are expectations (agents.core.live);
                # only mocks act, before the model's calls of the turn.
                self.step_mocks[step.expectation.tool] = copy_tree(step.expectation.value)
        else:
            if self.turn >= 0:
                self.live_turn(live_step)
                self.end_turn()
        events = tuple(
            replace(event, dropped_at_turn=self.dropped_at[event.index])
            if event.index in self.dropped_at
            else event
            for event in self.events
        )
        return SimulationResult(
            instructions=instructions,
            instruction_tokens=estimate_tokens(instructions),
            turns=tuple(self.turns),
            events=events,
            final_state=copy_tree(self.state),
            diagnostics=tuple(self.diagnostics),
            instruction_diagnostics=tuple(compiled.diagnostics),
            model_calls=tuple(self.model_calls),
            stopped=self.stopped[1] if self.stopped is not None else "",
            stopped_turn=self.stopped[0] if self.stopped is not None else None,
        )
