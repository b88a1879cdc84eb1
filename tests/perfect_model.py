"""A "perfect model" on loopback: a real HTTP server that plays a CX app's goldens.

``PerfectModel(folder)`` reads a CX app's folder as CX exports it (``app.json``, the agents'
JSON and instructions, ``evaluations/*/*.json``) — nothing Statecraft made of it — and
answers each model request, in the OpenAI chat-completions or the Gemini
``generateContent`` protocol (``perfect_server``: a ``tests.llm_server.ModelServer`` whose
every request it answers), from the conversation the request carries:

- the golden being played is the one the test names (``model.play(name)``), else the one
  whose user messages the conversation's user messages begin;
- the turn in progress is the golden turn of the conversation's last user message (the
  n-th user message is the n-th golden turn that has a user text or event);
- the turn's calls so far are the function calls after that message (the agent's own, and
  another agent's relayed as ``<context>[Agent] called tool `name` …</context>``);
- the answer is the golden turn's next expected ``toolCall`` not yet made, with exactly the
  golden's arguments (a call the golden lists without arguments gets those of the tool's
  declared parameters that the goldens' ``updatedVariables`` name, else what a model makes
  of the user's words: ``understand``; a listed call also gets a date the user gave, and
  what the user said after its values for its one free-text parameter: ``_and_the_rest``), in
  the golden's order; when the agent answering is the app's root agent and the golden is
  played by another agent (its ``agentTransfer`` target, else the owner of its first tool
  the root does not have), first the routing call the root's instructions ask for
  (``Call {@TOOL: name} … with arg="value"``, the value that names the target agent), or
  ADK's ``transfer_to_agent``; when every call is made, the golden's ``agentResponse``
  text, or ``NEUTRAL`` when it has none.

Every request and answer is kept (``model.log``) for a test to read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.llm_server import (
    ModelServer,
    Reply,
    Seen,
    gemini_call,
    gemini_text,
    openai_call,
    openai_text,
)

NEUTRAL = "Thank you, noted."
TRANSFER_TOOL = "transfer_to_agent"

_BLOCK = re.compile(r"<(state_update|context)>.*?</\1>", re.DOTALL)
_RELAYED_CALL = re.compile(r"\[([^\]]+)\] called tool `([^`]+)`")
_ROUTE = re.compile(r"\{@TOOL:\s*([A-Za-z0-9_]+)\}[^\n]*?\b([A-Za-z_]\w*)\s*=\s*\"([^\"]+)\"")


@dataclass
class Turn:
    text: str  # the user's text or "<event>name</event>", "" for variables alone
    calls: list[tuple[str, dict[str, Any] | None]]
    transfer: str | None
    response: str | None
    variables: dict[str, Any]  # what the turn's updatedVariables expect
    notes: dict[int, str] = field(default_factory=dict)  # a call's expectation note


@dataclass
class Golden:
    name: str
    turns: list[Turn]

    @property
    def texts(self) -> list[tuple[int, str]]:
        return [(i, t.text) for i, t in enumerate(self.turns) if t.text]


def read_goldens(folder: Path) -> list[Golden]:
    out = []
    for path in sorted(folder.glob("evaluations/*/*.json")):
        data = json.loads(path.read_text())
        golden = data.get("golden")
        if not isinstance(golden, dict):
            continue
        turns = []
        for turn in golden.get("turns") or ():
            texts: list[str] = []
            event = ""
            calls: list[tuple[str, dict[str, Any] | None]] = []
            notes: dict[int, str] = {}
            transfer = None
            responses: list[str] = []
            variables: dict[str, Any] = {}
            for step in turn.get("steps") or ():
                given = step.get("userInput") or {}
                if isinstance(given.get("text"), str):
                    texts.append(given["text"])
                elif isinstance(given.get("event"), dict):
                    event = str(given["event"].get("event", ""))
                if isinstance(step.get("agentTransfer"), dict):
                    transfer = transfer or step["agentTransfer"].get("targetAgent")
                expected = step.get("expectation") or {}
                call = expected.get("toolCall")
                if isinstance(call, dict):
                    name = str(call.get("tool") or call.get("displayName") or "")
                    name = name.rstrip("/").rsplit("/", 1)[-1]
                    args = call.get("args")
                    calls.append((name, dict(args) if isinstance(args, dict) else None))
                    notes[len(calls) - 1] = str(expected.get("note") or "")
                if isinstance(expected.get("agentTransfer"), dict):
                    transfer = transfer or expected["agentTransfer"].get("targetAgent")
                if isinstance(expected.get("agentResponse"), dict):
                    chunks = expected["agentResponse"].get("chunks") or ()
                    responses += [c["text"] for c in chunks if isinstance(c.get("text"), str)]
                if isinstance(expected.get("updatedVariables"), dict):
                    variables.update(expected["updatedVariables"])
            text = "\n".join(texts) or (f"<event>{event}</event>" if event else "")
            turn_ = Turn(text, calls, transfer, "\n".join(responses) or None, variables)
            turn_.notes = notes
            turns.append(turn_)
        out.append(Golden(str(data.get("displayName") or path.parent.name), turns))
    return out


_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?", re.IGNORECASE)


def understand(param: str, text: str, year: int) -> Any:
    """What a model makes of the user's words for a parameter the golden gives no value
    for, as the tools' descriptions ask: a date as YYYY-MM-DD ("July 4th"), a time as HH:MM
    on the 24-hour clock ("6 PM", "8:30" at a dinner table is evening), else the words as-is."""
    lowered = text.lower()
    if "date" in param:
        for number, month in enumerate(_MONTHS, start=1):
            found = re.search(rf"\b{month}\s+(\d{{1,2}})", lowered)
            if found:
                return f"{year}-{number:02d}-{int(found.group(1)):02d}"
    if param == "time" or param.endswith("_time"):
        found = _TIME.search(lowered)
        if found:
            hour, minute = int(found.group(1)), int(found.group(2) or 0)
            period = (found.group(3) or "").replace(".", "")
            if (period == "pm" and hour < 12) or (not period and 1 <= hour <= 11):
                hour += 12
            if period == "am" and hour == 12:
                hour = 0
            return f"{hour:02d}:{minute:02d}"
    return text


_NOT_FREE_TEXT = ("date", "time", "size", "phone", "flow", "agent", "count", "number")


def _and_the_rest(text: str, args: dict[str, Any], params: set[str], year: int) -> dict[str, Any]:
    """A listed call's arguments, plus what else the user said that the tool takes and the
    golden leaves out — a date ("a table for 4 on June 20th"), or what follows the listed
    values ("It's Lee, and we'd like a booth") for the tool's one free-text parameter: what
    a model passes that reads "call it whenever the guest mentions their name OR special
    requests". The golden's own arguments are never changed."""
    for param in sorted(params - set(args)):
        if "date" in param and (value := understand(param, text, year)) != text:
            args[param] = value
    free = [p for p in params - set(args) if not any(word in p for word in _NOT_FREE_TEXT)]
    lowered, end = text.lower(), -1
    for value in args.values():
        at = lowered.find(str(value).lower())
        if at >= 0:
            end = max(end, at + len(str(value)))
    rest = text[end:].strip(" ,.") if end >= 0 else ""
    if len(free) == 1 and rest.lower().startswith("and ") and len(rest.split()) >= 3:
        args[free[0]] = rest[4:].strip()
    return args


def _leaves(value: Any, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every key of a nested object with a value that is not an object (the first wins)."""
    out = {} if out is None else out
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, dict):
                _leaves(sub, out)
            else:
                out.setdefault(key, sub)
    return out


# --------------------------------------------------------------------------- the request


@dataclass
class Conversation:
    """A request as the protocol-neutral things the perfect model reads."""

    items: list[tuple[str, Any]]  # ("user", text) | ("call", name) | ("reply", text)
    tools: dict[str, set[str]]  # declared function -> its parameter names
    gemini: bool
    system: str = ""

    @property
    def user_texts(self) -> list[str]:
        return [v for k, v in self.items if k == "user"]

    def calls_this_turn(self) -> list[str]:
        last = max((i for i, (k, _) in enumerate(self.items) if k == "user"), default=-1)
        return [v for k, v in self.items[last + 1 :] if k == "call"]


def _user_segments(text: str) -> list[tuple[str, Any]]:
    """A user content's text as user messages and relayed calls, in order."""
    out: list[tuple[str, Any]] = []
    at = 0
    for block in _BLOCK.finditer(text):
        rest = text[at : block.start()].strip()
        if rest:
            out.append(("user", rest))
        if block.group(1) == "context":
            found = _RELAYED_CALL.search(block.group(0))
            if found:
                out.append(("call", found.group(2)))
        at = block.end()
    rest = text[at:].strip()
    if rest:
        out.append(("user", rest))
    return out


def read_request(seen: Seen) -> Conversation:
    body = seen.body if isinstance(seen.body, dict) else {}
    items: list[tuple[str, Any]] = []
    tools: dict[str, set[str]] = {}
    if "messages" in body:
        for message in body.get("messages") or ():
            role = message.get("role")
            content = message.get("content")
            if role == "user" and isinstance(content, str):
                items += _user_segments(content)
            elif role == "assistant":
                if isinstance(content, str) and content:
                    items.append(("reply", content))
                for call in message.get("tool_calls") or ():
                    items.append(("call", call["function"]["name"]))
        for tool in body.get("tools") or ():
            function = tool.get("function") or {}
            params = (function.get("parameters") or {}).get("properties") or {}
            tools[function.get("name")] = set(params)
        system = "\n".join(
            m["content"]
            for m in body.get("messages") or ()
            if m.get("role") == "system" and isinstance(m.get("content"), str)
        )
        return Conversation(items, tools, gemini=False, system=system)
    for content in body.get("contents") or ():
        for part in content.get("parts") or ():
            call = part.get("functionCall") or part.get("function_call")
            if content.get("role") == "model":
                if isinstance(call, dict):
                    items.append(("call", call.get("name")))
                elif isinstance(part.get("text"), str):
                    items.append(("reply", part["text"]))
            elif isinstance(part.get("text"), str):
                items += _user_segments(part["text"])
    for tool in body.get("tools") or ():
        for declaration in (
            tool.get("functionDeclarations") or tool.get("function_declarations") or ()
        ):
            schema = (
                declaration.get("parameters")
                or declaration.get("parametersJsonSchema")
                or declaration.get("parameters_json_schema")
                or {}
            )
            tools[declaration.get("name")] = set(schema.get("properties") or {})
    instruction = body.get("systemInstruction") or body.get("system_instruction") or {}
    system = "\n".join(
        p.get("text", "") for p in instruction.get("parts") or () if isinstance(p, dict)
    )
    return Conversation(items, tools, gemini=True, system=system)


# --------------------------------------------------------------------------- the model


@dataclass
class PerfectModel:
    folder: Path
    goldens: list[Golden] = field(init=False)
    playing: str | None = None
    log: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.goldens = read_goldens(self.folder)
        app = json.loads((self.folder / "app.json").read_text())
        self.root = str(app.get("rootAgent") or "")
        self.agent_tools: dict[str, set[str]] = {}
        self.agent_folders: dict[str, Path] = {}
        for path in sorted(self.folder.glob("agents/*/*.json")):
            data = json.loads(path.read_text())
            self.agent_tools[str(data.get("displayName") or path.stem)] = set(
                data.get("tools") or ()
            )
            self.agent_folders[str(data.get("displayName") or path.stem)] = path.parent
        self.learned = self.learn_parameters()
        # The year the goldens' dates are in (what "July 4th" means to this app's goldens).
        years: list[str] = []
        for golden in self.goldens:
            for turn in golden.turns:
                for _tool, args in turn.calls:
                    years += re.findall(r"\b(20\d\d)-\d\d-\d\d\b", json.dumps(args or {}))
        self.year = int(max(set(years), key=years.count)) if years else 2026
        # Each agent's signature: the longest line of its instructions' first lines that
        # has no variable (what the compiled system instruction keeps verbatim).
        self.signatures: dict[str, str] = {}
        for agent in self.agent_tools:
            for name in ("instruction.txt", "instruction.md"):
                path = self.agent_folders[agent] / name
                if path.exists():
                    lines = [
                        line.strip()
                        for line in path.read_text().splitlines()[:12]
                        if "{" not in line and len(line.strip()) > 20
                    ]
                    self.signatures[agent] = max(lines, key=len, default="")
        # The routing calls the root's instructions ask for: value -> (tool, argument).
        self.routes: dict[str, tuple[str, str]] = {}
        for name in ("instruction.txt", "instruction.md"):
            path = self.folder / "agents" / self.root / name
            if path.exists():
                for tool, arg, value in _ROUTE.findall(path.read_text()):
                    self.routes.setdefault(value, (tool, arg))

    def learn_parameters(self) -> dict[tuple[str, str], str]:
        """(tool, parameter) -> the state key the goldens show it sets: a golden call with
        arguments whose value a leaf of the same turn's ``updatedVariables`` holds."""
        learned: dict[tuple[str, str], str] = {}
        for golden in self.goldens:
            for turn in golden.turns:
                leaves = _leaves(turn.variables)
                for tool, args in turn.calls:
                    for param, value in (args or {}).items():
                        for key, leaf in leaves.items():
                            if leaf == value and not isinstance(value, bool):
                                learned.setdefault((tool, param), key)
        return learned

    def arguments(self, golden: Golden, turn: Turn, tool: str, params: set[str]) -> dict:
        """The arguments of a call the golden lists without any: what the user said, as
        the ``updatedVariables`` of the turn (else of the golden's later turns) show it:
        by the parameter's name, the state key the goldens show the parameter sets, or a
        key that contains the name."""
        leaves = _leaves(turn.variables)
        for later in golden.turns[golden.turns.index(turn) + 1 :]:
            for key, value in _leaves(later.variables).items():
                leaves.setdefault(key, value)
        params = set(params) | {p for (t, p) in self.learned if t == tool}

        def value_of(param: str) -> tuple[bool, Any]:
            key = param if param in leaves else self.learned.get((tool, param))
            if key is None or key not in leaves:
                key = next((k for k in leaves if param in k or k in param), None)
            return (True, leaves[key]) if key is not None and key in leaves else (False, None)

        # The note names what the call sets (``Check_SetSpecialRequests_Called``): that
        # parameter alone, with the value the state shows, else what the user said.
        index = next(i for i, (t, a) in enumerate(turn.calls) if t == tool and a is None)
        note = re.sub(r"(?<!^)(?=[A-Z])", "_", turn.notes.get(index, "")).lower()
        for param in sorted(params, key=len, reverse=True):
            if param in note:
                found, value = value_of(param)
                return {param: value if found else understand(param, turn.text, self.year)}
        args: dict[str, Any] = {}
        for param in sorted(params):
            found, value = value_of(param)
            if found:
                args[param] = value
        return args

    def play(self, name: str | None) -> None:
        self.playing = name

    def golden(self, conversation: Conversation) -> Golden:
        if self.playing is not None:
            return next(g for g in self.goldens if g.name == self.playing)
        said = conversation.user_texts
        for golden in self.goldens:
            texts = [t for _, t in golden.texts]
            if texts[: len(said)] == said:
                return golden
        raise LookupError(f"no golden begins with {said!r}")

    def turn(self, golden: Golden, conversation: Conversation) -> Turn | None:
        said = conversation.user_texts
        texts = golden.texts
        if not said:
            return golden.turns[0] if golden.turns else None
        if len(said) <= len(texts) and texts[len(said) - 1][1] == said[-1]:
            return golden.turns[texts[len(said) - 1][0]]
        for index, text in texts:  # the history was cut: the first turn of that text
            if text == said[-1]:
                return golden.turns[index]
        return None

    def destination(self, golden: Golden) -> str | None:
        """The agent that plays the golden: its transfer target, else the owner of its
        first tool the root does not have."""
        for turn in golden.turns:
            if turn.transfer:
                return turn.transfer
        root_tools = self.agent_tools.get(self.root, set())
        for turn in golden.turns:
            for tool, _ in turn.calls:
                if tool not in root_tools:
                    owner = next((a for a, t in self.agent_tools.items() if tool in t), None)
                    if owner:
                        return owner
        # Neither: the first specialist the root's instructions route to.
        for value in self.routes:
            agent = self._agent_named(value)
            if agent:
                return agent
        return None

    def _agent_named(self, value: str) -> str | None:
        return next(
            (a for a in self.agent_tools if a != self.root and value.lower() in a.lower()), None
        )

    def current_agent(self, conversation: Conversation) -> str | None:
        """The agent answering: the one whose instructions' signature line the system
        instruction holds; else the root when it has every declared tool (a callback may
        declare only some), else the agent that has most of them."""
        for agent, line in self.signatures.items():
            if line and line in conversation.system:
                return agent
        declared = set(conversation.tools) - {TRANSFER_TOOL}
        if declared <= self.agent_tools.get(self.root, set()):
            return self.root
        best, score = None, -1.0
        for agent, tools in self.agent_tools.items():
            union = declared | tools
            overlap = len(declared & tools) / len(union) if union else 0.0
            if agent == self.root:
                continue
            if overlap > score:
                best, score = agent, overlap
        return best

    def routing_call(self, target: str, conversation: Conversation) -> tuple[str, dict] | None:
        for value, (tool, arg) in self.routes.items():
            if self._agent_named(value) == target and tool in conversation.tools:
                return tool, {arg: value}
        if TRANSFER_TOOL in conversation.tools:
            return TRANSFER_TOOL, {"agent_name": target}
        return None

    def decide(self, conversation: Conversation) -> tuple[str, Any]:
        """("call", (name, args)) or ("text", text)."""
        golden = self.golden(conversation)
        turn = self.turn(golden, conversation)
        if turn is None:
            return "text", NEUTRAL
        made = list(conversation.calls_this_turn())
        wanted: list[tuple[str, dict[str, Any] | None]] = []
        for tool, args in turn.calls:
            if tool in made:
                made.remove(tool)
            else:
                wanted.append((tool, args))
        target = self.destination(golden)
        routed = any(
            c == TRANSFER_TOOL or c in {t for t, _ in self.routes.values()}
            for c in conversation.calls_this_turn()
        )
        at_root = self.current_agent(conversation) == self.root
        listed_route = wanted and wanted[0][0] in {t for t, _ in self.routes.values()}
        if at_root and target and target != self.root and not routed and not listed_route:
            route = self.routing_call(target, conversation)
            if route is not None:
                return "call", route
        if wanted:
            # Every call of the turn still to make, in one answer (parallel function
            # calls, as a model that follows "call ALL setters in the SAME response" does).
            calls = []
            for tool, args in wanted:
                params = conversation.tools.get(tool, set())
                if args is None:
                    args = self.arguments(golden, turn, tool, params)
                else:
                    args = _and_the_rest(turn.text, dict(args), params, self.year)
                calls.append((tool, args))
            return "calls", calls
        return "text", turn.response or NEUTRAL

    def answer(self, seen: Seen) -> Reply:
        conversation = read_request(seen)
        try:
            kind, value = self.decide(conversation)
        except LookupError as exc:
            kind, value = "text", f"(no golden: {exc})"
        self.log.append({"path": seen.path, "kind": kind, "value": value})
        if kind == "call":
            name, args = value
            if conversation.gemini:
                return gemini_call(name, args)
            return _openai_call(name, args)
        if kind == "calls":
            return _gemini_calls(value) if conversation.gemini else _openai_calls(value)
        return gemini_text(value) if conversation.gemini else openai_text(value)


def _openai_call(name: str, args: dict[str, Any]) -> Reply:
    return openai_call(name, args)


def _openai_calls(calls: list[tuple[str, dict[str, Any]]]) -> Reply:
    reply = openai_call(*calls[0])
    message = reply.body["choices"][0]["message"]
    message["tool_calls"] = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for i, (name, args) in enumerate(calls)
    ]
    return reply


def _gemini_calls(calls: list[tuple[str, dict[str, Any]]]) -> Reply:
    reply = gemini_call(*calls[0])
    reply.body["candidates"][0]["content"]["parts"] = [
        {"functionCall": {"name": name, "args": args}} for name, args in calls
    ]
    return reply


def perfect_server(folder: Path) -> tuple[ModelServer, PerfectModel]:
    """A loopback server whose every request the perfect model of `folder` answers."""
    model = PerfectModel(folder)
    server = ModelServer(answer=model.answer)
    return server, model
