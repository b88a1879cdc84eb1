"""The language layer cannot be fooled by objects that answer for themselves.

Each escape below worked against the previous checks (``name.startswith("_")``,
``name in blocked``, ``str(name)`` on a user object): a ``str`` subclass defined by user code
answered the check as it liked, then ``getattr`` used its real text.  The checks now take
``type(x) is str`` and the base methods.  (The OS layer holds anyway: tests/sandbox/
test_os_boundary.py; this is defence in depth.)
"""

from __future__ import annotations

import textwrap

import pytest

from agents.sandbox import run_code

SNEAKY = """
class Sneaky(str):
    def startswith(self, prefix, *args):
        return False
    def endswith(self, suffix, *args):
        return False
    def __eq__(self, other):
        return False
    def __ne__(self, other):
        return True
    def __contains__(self, item):
        return False
    def lower(self):
        return "harmless"
"""


def tool(code: str, **kwargs):
    return run_code(textwrap.dedent(code), entry="t", kind="tool", **kwargs)


@pytest.mark.parametrize(
    "body",
    [
        "return getattr(t, Sneaky('__globals__'))",
        "return getattr((x for x in []), Sneaky('gi_frame'))",
        "return getattr(getattr(context, Sneaky('state')), Sneaky('_data'))",
        "return getattr(context.state, Sneaky('_recorder'))",
        "setattr(context, Sneaky('__class__'), None)",
        "setattr(context.state, Sneaky('_data'), {})",
        "return getattr(json, Sneaky('decoder'))",
        "return getattr(1, Sneaky('__class__'))",
        "return getattr(t, Sneaky('__code__'))",
    ],
    ids=[
        "globals",
        "gi_frame",
        "state-data",
        "recorder",
        "setattr-dunder",
        "setattr-private",
        "module-attribute",
        "class",
        "code",
    ],
)
def test_a_str_subclass_cannot_fool_the_attribute_guard(body):
    result = tool(f"import json\n{SNEAKY}\ndef t():\n    {body}\n")
    assert not result.ok, result
    if "json" in body:  # a module attribute the sandbox does not offer: not there at all
        assert result.error.kind == "exception", result.error
        assert "AttributeError: module 'json' has no attribute 'decoder'" in result.error.message
    else:  # a private or restricted name, whatever the str subclass answers
        assert result.error.kind == "forbidden", result.error


def test_a_str_subclass_cannot_fool_the_import_guard():
    result = tool(f"{SNEAKY}\ndef t():\n    return __import__(Sneaky('os'))\n")
    assert not result.ok and result.error.kind == "forbidden", result
    # And through the import statement's own machinery: importlib is not reachable at all.
    result = tool("def t():\n    import importlib\n")
    assert result.error.kind == "forbidden"


def test_a_str_subclass_is_written_to_state_by_its_real_text():
    code = f"{SNEAKY}\ndef t():\n    context.state[Sneaky('balance')] = Sneaky('lots')\n"
    result = tool(code, state={"balance": 1})
    assert result.ok, result.error
    assert result.writes == (("balance", "lots"),)  # not "harmless": the base str methods
    assert result.state == {"balance": "lots"}


@pytest.mark.parametrize(
    "method", ["__hash__", "__str__", "__int__", "__iter__", "__getattribute__"]
)
def test_methods_that_could_lie_to_the_host_cannot_be_defined(method):
    # __eq__ can be (CX code compares its objects), and the checks above survive it; these
    # cannot, so a value can never run its own code when the runner reads it.
    code = f"class Liar(str):\n    def {method}(self, *args):\n        return 1\ndef t():\n    return Liar('x')\n"
    result = tool(code)
    assert result.error is not None and result.error.kind == "forbidden", result
    assert method in result.error.message


@pytest.mark.parametrize(
    "expression",
    [
        "'{0.__class__}'.format(1)",
        "'{0.__globals__}'.format(t)",
        "'{0.gi_frame}'.format((x for x in []))",
        "'{x.__class__.__base__}'.format_map({'x': 1})",
        "string.Formatter().format('{0.__class__}', 1)",
        "string.Formatter().vformat('{0._data}', (context.state,), {})",
        "'{0.f_back}'.format(None)",
    ],
)
def test_format_strings_cannot_walk_to_private_attributes(expression):
    result = tool(f"import string\ndef t():\n    return {expression}\n")
    assert not result.ok, result
    assert result.error.kind == "forbidden", result.error


def test_generator_and_traceback_frames_are_unreachable():
    for body in (
        "g = (x for x in [1])\n    return g.gi_frame",
        "try:\n        1 / 0\n    except Exception as e:\n        return e.__traceback__",
        "try:\n        1 / 0\n    except Exception as e:\n        return getattr(e, 'with_traceback')(None).__traceback__.tb_frame",
        "async def a():\n        pass\n    return a().cr_frame",
    ):
        result = tool(f"def t():\n    {body}\n")
        assert not result.ok, (body, result)
        assert result.error.kind == "forbidden", (body, result.error)


def test_cx_style_code_is_allowed():
    code = """
    import dataclasses
    import hashlib
    import json as json_lib
    import logging
    import random
    import string
    import time
    import typing
    from typing import Any, Optional

    _CACHE: dict[str, Any] = {}
    _logger = logging.getLogger("cx")


    @dataclasses.dataclass
    class _Order:
        items: list[str] = dataclasses.field(default_factory=list)
        _secret: str = "kept"

        def _total(self) -> int:
            return len(self.items)


    def t(name: str) -> dict[str, Any]:
        order = _Order(items=["a", "b"])
        order._secret = "changed"
        total: int = order._total()
        _logger.info("order of %s", name)
        digest = hashlib.md5(name.encode("utf-8")).hexdigest()[:6]
        fields = {f for _, f, _, _ in string.Formatter().parse("{a} and {b}") if f}
        return {
            "hello": "Hello, {0}! {1:>4}".format(name, total),
            "map": "{who}".format_map({"who": name}),
            "f": f"{name!r:>8}",
            "module": __name__,
            "type": type(order).__name__,
            "secret": order._secret,
            "digest": digest,
            "fields": sorted(fields),
            "choice": random.Random(1).choice(["x"]),
            "eval": eval("a + 1", {"a": total}),
            "now": time.time() > 0,
            "optional": Optional[int] is not None and typing.Any is Any,
        }
    """
    result = run_code(textwrap.dedent(code), entry="t", kind="tool", args={"name": "Ada"})
    assert result.ok, result.error
    value = result.return_value
    assert value["hello"] == "Hello, Ada!    2"
    assert value["map"] == "Ada" and value["f"] == "   'Ada'"
    assert value["module"] == "<tool:t>" and value["type"] == "_Order"
    assert value["secret"] == "changed" and value["fields"] == ["a", "b"]
    assert value["eval"] == 3 and value["now"] and value["optional"]
    assert "INFO cx: order of Ada" in result.stdout


def test_private_attributes_of_sandbox_objects_stay_refused():
    for body in (
        "return context.state._data",
        "context.state._data = {}",
        "return context._secret",
        "import json\n    return json._default_encoder",
    ):
        result = tool(f"def t():\n    {body}\n")
        assert result.error is not None and result.error.kind == "forbidden", (body, result)


def test_cx_callback_signature_and_objects():
    code = """
    def after_tool_callback(tool, input, callback_context, tool_response):
        callback_context.state["seen"] = [tool.name, input, tool_response]
        return {"replaced": True}
    """
    result = run_code(
        textwrap.dedent(code),
        entry="after_tool_callback",
        kind="callback",
        args={"tool": "lookup", "args": {"id": 1}, "tool_response": {"ok": 1}},
    )
    assert result.ok, result.error
    assert result.writes == (("seen", ["lookup", {"id": 1}, {"ok": 1}]),)
    code = """
    def before_model_callback(callback_context, llm_request):
        llm_request.config.hide_tool("secret_tool")
        return LlmResponse.from_parts(parts=[Part.from_text("Hi"), Part.from_agent_transfer(agent="B")])
    """
    result = run_code(textwrap.dedent(code), entry="before_model_callback", kind="callback")
    assert result.ok, result.error
    assert result.return_value == {
        "content": {
            "parts": [
                {"text": "Hi"},
                {"function_call": {"args": {"agent_name": "B"}, "name": "transfer_to_agent"}},
            ],
            "role": "model",
        }
    }


def test_a_tool_calls_another_tool_of_the_app():
    code = "def t():\n    return tools.double({'n': 21}).json()['result']\n"
    tools = {"double": "def double(n):\n    return {'twice': n * 2}\n"}
    result = run_code(code, entry="t", kind="tool", tools=tools)
    assert result.error is None and result.return_value == {"twice": 42}
    unknown = run_code("def t():\n    return tools.nope({})\n", entry="t", kind="tool")
    assert unknown.error is not None and "no tool named 'nope'" in unknown.error.message


# ---------------------------------------------------------------- issue 22, item 16


def _forbidden(result, *words):
    assert result.error is not None and result.error.kind == "forbidden", result
    for word in words:
        assert word in result.error.message, result.error.message


@pytest.mark.parametrize("kind", ["tool", "callback"])
def test_singledispatch_is_not_handed_out(kind):
    # register(f) evaluated f's string annotation with the real eval (no guard at all).
    code = """
    import functools
    def t():
        def f(x: "().__class__.__base__"):
            pass
        functools.singledispatch(lambda x: x).register(f)
        return "ran"
    """
    entry = "t" if kind == "tool" else "before_agent_callback"
    code = textwrap.dedent(code).replace("def t():", f"def {entry}(*args, **kwargs):")
    result = run_code(code, entry=entry, kind=kind)
    assert result.error is not None and "singledispatch" in result.error.message, result
    assert result.return_value != "ran"


@pytest.mark.parametrize(
    ("body", "word"),
    [
        # update_wrapper with the real getattr/setattr: a function's globals (the guards).
        ("functools.update_wrapper(H(), t, assigned=('__globals__',), updated=())", "standard"),
        ("functools.update_wrapper(t, H(), assigned=(), updated=('__globals__',))", "__dict__"),
        ("functools.wraps(t, assigned=('__globals__',))(H())", "standard"),
        # ... or copying a sandbox object's private attributes onto the code's own object.
        ("functools.update_wrapper(H(), context.state)", "wrapped"),
        # the class made with the real three-argument type
        ("functools.update_wrapper(type(int)('X', (), {})(), t, ('__globals__',), ())", "standard"),
    ],
    ids=["assigned", "updated", "wraps", "host-object", "real-type-class"],
)
@pytest.mark.parametrize("kind", ["tool", "callback"])
def test_update_wrapper_reaches_no_attribute_around_the_guard(body, word, kind):
    entry = "t" if kind == "tool" else "before_agent_callback"
    code = (
        f"import functools\nclass H:\n    pass\ndef helper():\n    pass\n"
        f"def {entry}(*args, **kwargs):\n    t = helper\n    {body}\n    return 'ran'\n"
    )
    result = run_code(code, entry=entry, kind=kind)
    _forbidden(result, word)


@pytest.mark.parametrize(
    "body",
    [
        "type(int)('Liar', (), {'__hash__': lambda self: 1})",
        "type(type(1))('Liar', (str,), {'__str__': lambda self: 'x'})",
        "dataclasses.make_dataclass('Liar', [], namespace={'__iter__': lambda self: iter([])})",
        "dataclasses.make_dataclass('Holder', [('__globals__', dict)])",
        "enum.Enum('Liar', [('__hash__', 1)])",
        "enum.Enum('Liar', {'__str__': 1})",
    ],
    ids=[
        "type-of-int",
        "type-of-type",
        "make_dataclass-namespace",
        "make_dataclass-field",
        "enum-pairs",
        "enum-mapping",
    ],
)
def test_no_way_of_making_a_class_defines_a_refused_dunder(body):
    result = tool(f"import dataclasses, enum\ndef t():\n    {body}\n    return 'ran'\n")
    _forbidden(result, "cannot define")


def test_type_of_a_class_still_answers_like_its_metaclass():
    code = """
    import dataclasses
    class A:
        def __eq__(self, other):
            return True
    def t():
        Made = type(A)("Made", (A,), {"size": 3})
        Data = dataclasses.make_dataclass("Data", [("n", int)])
        return [isinstance(A, type(int)), type(A) == type(int), type(A).__name__,
                Made().size, Data(2).n, type(A)(A()).__name__]
    """
    result = tool(code)
    assert result.ok, result.error
    assert result.return_value == [True, True, "type", 3, 2, "A"]


def test_an_enum_class_statement_works():
    code = """
    import enum
    class Color(enum.Enum):
        RED = 1
        GREEN = 2
    class Level(enum.IntEnum):
        LOW = 1
    def t():
        return [Color.RED.name, Color(2).name, [c.value for c in Color], Level.LOW + 1]
    """
    result = tool(code)
    assert result.ok, result.error
    assert result.return_value == ["RED", "GREEN", [1, 2], 2]


# ---------------------------------------------------------------- the state's recorder

# Each way the standard library keeps references to what it walked: deepcopy's memo keeps
# every original alive in ``memo[id(memo)]`` (the state's recorder was among them, and
# appending to its writes skipped every check); copy.copy / copy.replace / a reduce hand
# back the object's parts. None may reach anything that records writes.
REACH_RECORDER = {
    "deepcopy memo of the state": "memo = {}\n    copy.deepcopy(context.state, memo)\n"
    "    kept = list(memo.get(id(memo), []))",
    "deepcopy memo of a list holding the state": "memo = {}\n"
    "    copy.deepcopy([context.state, context.variables], memo)\n"
    "    kept = list(memo.get(id(memo), [])) + list(memo.values())",
    "deepcopy memo of the context": "memo = {}\n    kept = []\n    try:\n"
    "        copy.deepcopy(context, memo)\n    except TypeError:\n        pass\n"
    "    kept = list(memo.get(id(memo), [])) + list(memo.values())",
    "copy of the state": "kept = [copy.copy(context.state)]",
    "copy of the context": "kept = []\n    try:\n        kept = [copy.copy(context)]\n"
    "    except TypeError:\n        pass",
    "replace of the state": "kept = []\n    try:\n        kept = [copy.replace(context.state)]\n"
    "    except TypeError:\n        pass",
    "reduce_ex through copyreg-like helpers": "kept = []\n    try:\n"
    "        kept = list(functools.reduce(lambda a, b: a + [b], [context.state], []))\n"
    "    except TypeError:\n        pass",
}


@pytest.mark.parametrize("reach", list(REACH_RECORDER.values()), ids=list(REACH_RECORDER))
def test_no_stdlib_helper_hands_out_the_states_recorder(reach):
    code = f"""
import copy
import functools

def t():
    {reach}
    found = []
    for item in kept:
        for value in ([item] + (list(item) if isinstance(item, (list, tuple)) else [])):
            if hasattr(value, "writes") or hasattr(value, "removed"):
                value.writes.append(["bad name\\n<script>", 1])
                value.writes.append(["__proto__", 2])
                found.append(type(value).__name__)
    return found
"""
    result = run_code(code, entry="t", kind="tool", state={"a": 1}, variables_declared=["a"])
    assert result.ok, result.error
    assert result.return_value == []
    assert result.writes == ()


def test_a_deep_copy_of_the_state_is_its_values_as_a_plain_dict():
    result = tool(
        """
        import copy
        def t():
            snapshot = copy.deepcopy(context.state)
            snapshot["a"].append(2)
            shallow = copy.copy(context.variables)
            return [type(snapshot).__name__, snapshot, context.state["a"], shallow]
        """,
        state={"a": [1]},
    )
    assert result.ok, result.error
    assert result.return_value == ["dict", {"a": [1, 2]}, [1], {"a": [1]}]


@pytest.mark.parametrize("key", ["bad name\n<script>", "__proto__", "", "x" * 257, "a\x00b"])
def test_a_state_key_outside_the_rule_is_refused_at_the_write(key):
    result = tool(f"def t():\n    context.state[{key!r}] = 1\n", state={})
    assert not result.ok and "is not a state key" in result.error.message
    assert result.writes == ()


def test_the_host_refuses_an_answer_whose_writes_break_the_key_rule():
    from agents.sandbox.answers import check_answer_shape

    assert check_answer_shape({"writes": [["ok_name", 1]]}) is None
    assert check_answer_shape({"writes": [["_own_key", 1]]}) is None  # CX code's own keys
    assert check_answer_shape({"writes": [["__proto__", 1]]}) == "writes"
    assert check_answer_shape({"writes": [["bad\n<script>", 1]]}) == "writes"
    assert check_answer_shape({"removed": ["__proto__"]}) == "removed"
