"""CX Agent Studio's callback objects, as tool and callback code sees them in the sandbox.

Plain-Python counterparts of the pydantic models of Google's ``cxas-scrapi``
(``src/cxas_scrapi/utils/callback_libs.py``): ``Part``, ``Content``, ``FunctionCall``,
``FunctionResponse``, ``Blob``, ``LlmRequest``, ``LlmResponse``, ``Tool``, and the
``tools.<name>(...)`` proxy that calls another tool of the app.  Loaded by ``runner.py`` in
the session child (standard library only); values they hold are plain JSON, and
``to_json()`` gives what the host receives when code returns one of them.
"""

import base64
import json


class CxObject:
    """Attributes named in FIELDS (snake_case), read and written freely by user code."""

    FIELDS = ()
    _guarded_writes = True  # RestrictedPython's write guard: plain data, writable

    def __init__(self, **values):
        for name in self.FIELDS:
            setattr(self, name, values.pop(name, None))
        if values:
            raise TypeError(f"{type(self).__name__} has no field {sorted(values)[0]!r}")

    def to_json(self):
        out = {}
        for name in self.FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = to_plain(value)
        return out

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.FIELDS if getattr(self, k))
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other):
        return type(other) is type(self) and self.to_json() == other.to_json()

    __hash__ = None


def to_plain(value):
    if isinstance(value, CxObject):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("ascii", "replace")
    return value


class Blob(CxObject):
    FIELDS = ("display_name", "data", "mime_type", "transcript_field")

    @property
    def raw_data(self):
        return base64.b64decode(self.data)

    def transcript(self):
        return self.transcript_field

    @classmethod
    def from_json(cls, data):
        return cls(data=base64.b64encode(data.encode("utf-8")), mime_type="application/json")


class FunctionCall(CxObject):
    FIELDS = ("id", "args", "name")


class FunctionResponse(CxObject):
    FIELDS = ("will_continue", "id", "name", "response")


class Part(CxObject):
    FIELDS = ("function_call", "function_response", "text", "inline_data")

    def text_or_transcript(self):
        if self.text is not None:
            return self.text
        return self.inline_data.transcript() if self.inline_data is not None else None

    def has_function_call(self, name):
        return self.function_call is not None and self.function_call.name == name

    def has_function_response(self, name):
        return self.function_response is not None and self.function_response.name == name

    @classmethod
    def from_text(cls, text):
        return cls(text=text)

    @classmethod
    def from_function_call(cls, name, args):
        return cls(function_call=FunctionCall(name=name, args=args))

    @classmethod
    def from_function_response(cls, name, response):
        return cls(function_response=FunctionResponse(name=name, response=response))

    @classmethod
    def from_inline_data(cls, data, mime_type):
        return cls(inline_data=Blob(data=data, mime_type=mime_type))

    @classmethod
    def from_json(cls, data):
        return cls(inline_data=Blob.from_json(data=data))

    @classmethod
    def from_audio(cls, audio_uri, cancellable=False, interruptable=True):
        data = json.dumps(
            {"audioUri": audio_uri, "cancellable": cancellable, "interruptable": interruptable}
        )
        return cls.from_inline_data(
            base64.b64encode(data.encode("utf-8")), "application/json+audio"
        )

    @classmethod
    def from_agent_transfer(cls, agent):
        return cls.from_function_call("transfer_to_agent", {"agent_name": agent})

    @classmethod
    def from_end_session(cls, *, reason, escalated=False):
        return cls.from_function_call(
            "end_session", {"reason": reason, "session_escalated": escalated}
        )

    @classmethod
    def from_customized_response(
        cls,
        *,
        content="",
        disable_barge_in=False,
        enable_dtmf=False,
        dtmf_finish_digit="#",
        dtmf_endpointing_timeout=3,
    ):
        data = json.dumps(
            {
                "content": content,
                "disableBargeIn": disable_barge_in,
                "enableDtmf": enable_dtmf,
                "dtmfFinishDigit": dtmf_finish_digit,
                "dtmfEndpointingTimeout": dtmf_endpointing_timeout,
            }
        )
        return cls.from_inline_data(
            base64.b64encode(data.encode("utf-8")), "application/json+agentResponse"
        )


class Content(CxObject):
    FIELDS = ("parts", "role")

    def is_user(self):
        return self.role == "user"

    def is_model(self):
        return self.role == "model"


class GenerateContentConfig(CxObject):
    FIELDS = ("system_instruction", "tools", "excluded_tools")

    def hide_tool(self, tool_name):
        if self.excluded_tools is None:
            self.excluded_tools = []
        self.excluded_tools.append(tool_name)


class LlmRequest(CxObject):
    FIELDS = ("model", "contents", "config")

    def __init__(self, **values):
        super().__init__(**values)
        if self.contents is None:
            self.contents = []
        if self.config is None:
            self.config = GenerateContentConfig()


class LlmResponse(CxObject):
    FIELDS = ("content", "partial", "turn_complete")

    @classmethod
    def from_parts(cls, parts):
        return cls(content=Content(parts=parts, role="model"))


class Tool(CxObject):
    FIELDS = ("name", "description")


class ToolResponse:
    """What ``tools.<name>(...)`` returns: ``.json()`` is ``{"result": <return value>}``."""

    def __init__(self, result):
        self.result = result

    def json(self):
        return {"result": self.result}


class Tools:
    """``tools.<name>(args)``: run another tool of the app (its code, sandboxed the same way)."""

    def __init__(self, names, call_tool):
        self.names = frozenset(names)
        self.call_tool = call_tool

    def __getattr__(self, name):
        if name.startswith("_") or name not in self.names:
            raise AttributeError(f"the app has no tool named {name!r}")
        call_tool = self.call_tool

        def call(args=None, **kwargs):
            arguments = dict(args or {})
            arguments.update(kwargs)
            return ToolResponse(call_tool(name, arguments))

        return call

    def __repr__(self):
        return f"<tools: {', '.join(sorted(self.names))}>"


def part_from(value):
    """A Part from its JSON (``text``, ``function_call``, ``function_response``).

    A part without text reads ``text`` as ``""``, as an unset string field of the runtime's
    message objects does (CX code writes ``getattr(part, "text", "")`` and ``.strip()``s it).
    """
    if not isinstance(value, dict):
        return Part(text=str(value))
    call = value.get("function_call")
    response = value.get("function_response")
    return Part(
        text=value.get("text") if isinstance(value.get("text"), str) else "",
        function_call=FunctionCall(name=call.get("name"), args=call.get("args") or {})
        if isinstance(call, dict)
        else None,
        function_response=FunctionResponse(
            name=response.get("name"), response=response.get("response")
        )
        if isinstance(response, dict)
        else None,
    )


def content_from(value, role="model"):
    """A Content from what the host sends (text, a Content's JSON, an LlmResponse's JSON)."""
    if isinstance(value, str):
        return Content(parts=[Part(text=value)], role=role)
    if isinstance(value, dict):
        if isinstance(value.get("content"), dict):
            value = value["content"]
        parts = [part_from(part) for part in value.get("parts") or ()]
        return Content(parts=parts, role=value.get("role", role))
    return Content(parts=[], role=role)


class Event(CxObject):
    """A session event as ``callback_context.events`` holds it (CX's ``Event``)."""

    FIELDS = ("id", "author", "invocation_id", "content", "error_code", "error_message")

    def is_user(self):
        return self.author == "user"

    def is_agent(self, agent_name=None):
        if agent_name is None:
            return self.author != "user"
        return self.author == agent_name

    def has_error(self):
        return self.error_code is not None

    def parts(self):
        if self.content is not None and self.content.parts:
            return self.content.parts
        return []


def events_from(values):
    """CX Events from the host's ``[{"author": …, "content": {…}}]``."""
    events = []
    for number, value in enumerate(values or ()):
        if isinstance(value, dict):
            author = value.get("author") if isinstance(value.get("author"), str) else "user"
            content = content_from(value.get("content"), "user" if author == "user" else "model")
            events.append(Event(id=f"e-{number}", author=author, content=content))
    return events


def last_parts(events, of_user):
    """CX's ``get_last_user_input`` / ``get_last_agent_output``: the parts of the newest
    run of user (or agent) events."""
    parts = []
    for event in reversed(events):
        if parts and event.is_user() != of_user:
            break
        if event.is_user() == of_user:
            parts = list(event.parts()) + parts
    return parts


GLOBALS = {
    "Blob": Blob,
    "Content": Content,
    "FunctionCall": FunctionCall,
    "FunctionResponse": FunctionResponse,
    "GenerateContentConfig": GenerateContentConfig,
    "LlmRequest": LlmRequest,
    "LlmResponse": LlmResponse,
    "Part": Part,
    "Tool": Tool,
}
