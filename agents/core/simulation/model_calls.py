"""Model calls as ADK makes them: instructions compiled from the state of the moment, the model
callbacks, the scripted (or live) answer, and ADK's loop that calls the model again after a
function call.
"""

from __future__ import annotations

from typing import Any

from agents.core.compile import compile_instructions
from agents.core.diagnostics import Diagnostic, Message, Severity
from agents.core.model import (
    RUN_ENDING_ERRORS,
    ModelAnswer,
    ModelRequest,
    function_declarations,
    transfer_note,
)
from agents.core.simulation.calls import FunctionCalls
from agents.core.simulation.results import ModelCall
from agents.core.simulation.values import (
    MAX_UNSCRIPTED_CALLS,
    copy_tree,
    response_parts,
    same_value,
)
from agents.core.spec import CallbackKind
from agents.core.tokens import estimate_tokens


class ModelCalls(FunctionCalls):
    """A run's model calls."""

    def compile_now(self) -> tuple[str, tuple[str, ...]]:
        """The instructions compiled from the current state, and the static variables whose
        value changed since the previous model call."""
        compiled = compile_instructions(
            self.agent.instructions,
            self.state,
            channel=self.session.channel,
            modality=self.session.modality,
        )
        values = {name: copy_tree(self.state.get(name)) for name in self.static_names}
        changed: tuple[str, ...] = ()
        if self.static_seen is not None:
            changed = tuple(
                name
                for name in self.static_names
                if not same_value(self.static_seen.get(name), values[name])
            )
        self.static_seen = values
        self.latest_instructions = compiled.text
        return compiled.text, changed

    def model_answer(
        self, request: dict[str, Any], scripted: tuple[dict[str, Any], ...]
    ) -> tuple[dict[str, Any], ...]:
        """The model's answer to `request` (``contents`` with the state updates the model
        reads, ``config.system_instruction``): offline, the scenario's scripted answer. The
        one place a live model answers instead."""
        return scripted

    def scripted_answer(self, scripted: tuple[dict[str, Any], ...]) -> None:
        """The scripted model's next answer (an AGENT or TOOL step, ``expect call`` with
        arguments, ``expect agent``, ``expect transfer``). It is used by the first model call
        that reaches the model: a ``before_model`` callback answering in the model's place
        does not use it up. When that callback's answer has a function call, the call runs
        and ADK's loop calls the model again (this answer still to come, after a transfer by
        the new agent); when it is text alone, ADK's turn ends with it, and this and the
        turn's later scripted answers are not used (SC420)."""
        if self.model_done is not None:
            self.unused_answers += 1
            return
        if self.session_ended is not None:
            self.skipped_after_end += 1  # CX's end_session ended the conversation
            return
        for _ in range(MAX_UNSCRIPTED_CALLS):
            reached_model = self.model_call(scripted)
            if reached_model or self.turn_ended is not None or self.turn_answered is not None:
                return
            if self.session_ended is not None:
                return
            if not self.loop_pending:
                self.model_done = "before_model_callback"
                self.unused_answers += 1
                return
        self.loop_stopped()

    def loop_stopped(self) -> None:
        self.loop_pending = False
        self.diagnostics.append(
            Diagnostic(
                "SC419",
                Severity.WARNING,
                Message(
                    "turn %(turn)s: the model was called %(max_unscripted_calls)s "
                    "times in a row and every answer had a function call; the "
                    "loop stops here.",
                    turn=self.turn,
                    max_unscripted_calls=MAX_UNSCRIPTED_CALLS,
                ),
                subject=self.agent.name,
            )
        )

    def live_run_stopped(self) -> None:
        """A live run's model error that ends the run (``RUN_ENDING_ERRORS``): said once,
        after the turn it happened in; the later turns are not run (no model call)."""
        self.diagnostics.append(
            Diagnostic(
                "SC421",
                Severity.ERROR,
                Message(
                    "the live run stopped in turn %(turn)s (%(error)s): the later turns were "
                    "not run and the model was not called again.",
                    turn=self.turn,
                    error=self.live_stopped,
                ),
                subject=self.agent.name,
            )
        )

    def live_turn(self, user_step: int | None) -> None:
        """A live run's turn (ADK's loop): call the model until it answers without a
        function call, a call fails, or the code ends the turn. Only a turn started by a
        user input calls the model. The caps are the strategy's (``agents.core.live``)."""
        if self.model is None or user_step is None or self.live_stopped:
            return
        self.step_index = user_step
        while self.turn_ended is None and self.turn_answered is None:
            if self.session_ended is not None:
                break  # CX's end_session ended the conversation: no further model call
            before = len(self.model_calls)
            self.model_call(None)
            # No answer, an answer without a function call, or a call that got no response
            # (a tool the agent does not have, SC404/SC405, or one that raised: ADK's
            # invocation ends there) ends the turn's loop.
            if len(self.model_calls) == before or not self.loop_pending:
                break
        # The live loop ends here: the end of the turn asks no scripted answer of it.
        self.loop_pending = False

    def ask_model(
        self,
        index: int,
        instructions: str,
        contents: list[dict[str, Any]],
        hidden: tuple[str, ...] = (),
    ) -> Any:
        """A live run's answer for model call `index` (a ``ModelAnswer``): `instructions` as
        the ``before_model`` callbacks left them, without the tools they hid."""
        assert self.model is not None
        note = transfer_note(self.app, self.agent)
        system = instructions
        if note:
            # ADK appends its note before the callbacks run: what they appended comes after.
            compiled = self.latest_instructions
            if instructions.startswith(compiled):
                system = f"{compiled}\n\n{note}{instructions[len(compiled) :]}"
            else:
                system = f"{instructions}\n\n{note}"
        request = ModelRequest(
            index=index,
            turn=self.turn,
            agent=self.agent.name,
            system_instruction=system,
            contents=tuple(copy_tree(contents)),
            tools=tuple(
                d
                for d in function_declarations(self.app, self.agent)
                if not (isinstance(d, dict) and d.get("name") in hidden)
            ),
        )
        try:
            answer = self.model(request)
        except Exception as exc:  # a strategy must answer; this keeps the run alive
            answer = ModelAnswer(
                error="bad_answer",
                message=Message("%(name)s: %(exc)s", name=type(exc).__name__, exc=exc),
            )
        if answer.error:
            # A cap refuses the call before it is made: it gets no number of its own.
            message = (
                Message("no further model call (cap): %(message)s", message=answer.message)
                if answer.error == "cap"
                else Message(
                    "model call %(index)s failed (%(error)s): %(message)s",
                    index=index + 1,
                    error=answer.error,
                    message=answer.message,
                )
            )
            self.step_error(
                "SC421",
                message,
                source="model",
                subject=self.agent.name,
            )
            self.turn_ended = Message("the model call")
            if answer.error in RUN_ENDING_ERRORS:
                self.live_stopped = answer.error
        return answer

    def model_call(
        self, scripted: tuple[dict[str, Any], ...] | None, *, unscripted: bool = False
    ) -> bool:
        """One model call, as ADK makes it: the request (instructions compiled from the
        current state, the history), ``before_model`` callbacks (a returned response
        replaces the model's answer and the ``after_model`` callbacks do not run), the
        model (the scripted answer), ``after_model`` callbacks (a returned response
        replaces the answer); then the answer's parts: text is the agent's message, a
        function call runs the tool. Returns whether the model itself was asked (False when
        a ``before_model`` callback answered in its place). `scripted` None: a live run,
        the model answers (``ask_model``) after the ``before_model`` callbacks, when they
        did not."""
        instructions, changed = self.compile_now()
        index = len(self.model_calls)
        history = tuple(
            i for i in range(self.window_start, len(self.events)) if self.events[i].model_visible
        )
        contents = self.model_contents(state_updates=False)
        request = {"contents": contents, "config": {"system_instruction": instructions}}
        answer, replaced_by = scripted or (), ""
        scope = self.begin_scope()
        returned, value = self.run_callbacks(CallbackKind.BEFORE_MODEL, {"llm_request": request})
        parts = response_parts(value) if returned else None
        # The request as the callbacks left it (ADK's model gets the same LlmRequest): a
        # system instruction they changed (Bella Notte's engine appends its directive) and
        # the tools they hid.
        config = request.get("config") if isinstance(request.get("config"), dict) else {}
        sent = config.get("system_instruction")
        sent = sent if isinstance(sent, str) else instructions
        hidden = tuple(str(t) for t in config.get("hidden_tools") or ())
        if parts is not None:
            answer, replaced_by = parts, "before_model_callback"
        elif self.turn_ended is None:
            model_request = {
                "contents": self.model_contents(),
                "config": {"system_instruction": sent},
            }
            if scripted is None:
                scripted = answer = self.ask_model(
                    index, sent, model_request["contents"], hidden
                ).parts
            else:
                answer = self.model_answer(model_request, scripted)
        if parts is None and self.turn_ended is None:
            response = {"content": {"role": "model", "parts": [dict(p) for p in answer]}}
            returned, value = self.run_callbacks(
                CallbackKind.AFTER_MODEL, {"llm_response": response}
            )
            parts = response_parts(value) if returned else None
            if parts is not None:
                answer, replaced_by = parts, "after_model_callback"
        self.model_calls.append(
            ModelCall(
                index=index,
                turn=self.turn,
                step=self.step_index,
                instructions=instructions,
                instruction_tokens=estimate_tokens(instructions),
                changed=changed,
                scripted=scripted or (),
                answer=answer,
                replaced_by=replaced_by,
                history=history,
                unscripted=unscripted,
                sent_instructions=sent if sent != instructions else "",
                hidden_tools=hidden,
            )
        )
        if not replaced_by and self.model is None and hidden:
            for part in answer:
                call = part.get("function_call")
                name = call.get("name") if isinstance(call, dict) else None
                if name in hidden:
                    # A note at its step (the timeline shows it before the call), never an
                    # error: ADK's tool table still has the tool.
                    self.note(
                        "SC422",
                        Message(
                            "turn %(turn)s: the scripted call of %(tool)s runs, but "
                            "the before_model callback of %(agent)s hid %(tool)s from "
                            "the model for this call: a live model would not be "
                            "offered it.",
                            turn=self.turn,
                            tool=name,
                            agent=self.agent.name,
                        ),
                        source=name,
                        subject=self.agent.name,
                    )
        self.loop_pending = False
        reached_model = replaced_by != "before_model_callback"
        if self.turn_ended is not None:
            self.roll_back(scope, "the model call")
            return reached_model
        note = changed
        # ADK yields the answer (its text) before it runs the answer's function calls.
        texts = [p for p in answer if not isinstance(p.get("function_call"), dict)]
        calls = [p for p in answer if isinstance(p.get("function_call"), dict)]
        answered: list[bool] = []  # per function call: whether it got a response
        for part in texts + calls:
            if self.turn_ended is not None:
                break
            call = part.get("function_call")
            if isinstance(call, dict):
                name = call.get("name")
                args = call.get("args")
                answered.append(
                    self.run_function_call(
                        name if isinstance(name, str) else "",
                        dict(args) if isinstance(args, dict) else {},
                        model_call=index,
                        instructions_changed=note,
                        replaced_by=replaced_by,
                    )
                )
                note = ()
            elif isinstance(part.get("text"), str):
                label = part["text"]
                if replaced_by:
                    label = f"{label}  (answer from the {replaced_by})"
                elif unscripted:
                    label = f"{label}  (the model's reply after the function responses: not "
                    "in the script)"
                self.add_event(
                    "agent",
                    part["text"],
                    source=self.agent.name,
                    label=label,
                    model_call=index,
                    instructions_changed=note,
                )
                note = ()
        target, self.transfer_after_calls = self.transfer_after_calls, None
        if target is not None and self.turn_ended is None:
            self.transfer(target)
        # ADK calls the model again after the function responses (`scripted_answer`,
        # `finish_model_loop`); a call that could not be made or raised (SC404/405/417, a
        # tool's error) ends it, as it ends ADK's invocation: the model is never sent a
        # call without its response (a provider answers that with 400).
        self.loop_pending = (
            bool(answered)
            and all(answered)
            and self.turn_ended is None
            and self.session_ended is None
        )
        return reached_model

    def finish_model_loop(self) -> None:
        """ADK's loop at the end of a turn's script: while the last answer had a function
        call (a scripted call, or a callback's answer), the model is called again — its
        ``before_model`` callbacks, then the model, whose reply past the script is empty
        text — until an answer has no function call (at most MAX_UNSCRIPTED_CALLS)."""
        calls = 0
        while self.loop_pending and self.turn_ended is None and self.turn_answered is None:
            if calls >= MAX_UNSCRIPTED_CALLS:
                self.loop_stopped()
                break
            calls += 1
            self.model_call(({"text": ""},), unscripted=True)
