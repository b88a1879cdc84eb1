"""The exported package's ``same_value`` is a copy of the simulation's (the package runs
without Statecraft): the two must agree on every value, or the package would count a write
the simulation does not (or the reverse) and their ``<state_update>`` lines would differ.

The runtime is imported from an exported package, as ADK imports it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.core.simulation import values
from agents.core.spec import AgentSpec, AppSpec
from tests.adk.export_harness import load_package

pytestmark = [pytest.mark.adk]
pytest.importorskip("google.adk", reason="google-adk is in the test extra")

NAN = math.nan


@pytest.fixture(scope="module")
def exported_same_value(tmp_path_factory):
    app = AppSpec(name="same value", agents=(AgentSpec("a", is_root=True),))
    module, _ = load_package(app, (), tmp_path_factory.mktemp("package"))
    return importlib.import_module(f"{module.__name__}.statecraft_runtime.runtime").same_value


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(min_value=-3, max_value=3) | st.sampled_from([0.0, -0.0, 1.0, NAN, math.inf]),
    st.sampled_from(["", "a", "1", "True", "null"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    ),
    max_leaves=8,
)


def _near(value):
    """A value that is often, but not always, the same as `value` by Statecraft's rule."""
    return st.one_of(
        st.just(value),
        st.just(_swap_numbers(value)),
        st.just(_as_lists(value)),
        json_values,
    )


def _swap_numbers(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _swap_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_swap_numbers(v) for v in value)
    return value


def _as_lists(value):
    if isinstance(value, dict):
        return {k: _as_lists(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list | tuple):
        return [_as_lists(v) for v in value]
    return value


pairs = json_values.flatmap(lambda a: st.tuples(st.just(a), _near(a)))


# Generation is quick alone; on a loaded machine (after the ADK suite has filled the
# process) it can pass Hypothesis's time check, which says nothing about the property.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(pairs)
def test_the_package_and_the_simulation_agree_on_same_value(exported_same_value, pair):
    a, b = pair
    assert exported_same_value(a, b) == values.same_value(a, b), (a, b)
    assert exported_same_value(b, a) == values.same_value(b, a), (b, a)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (True, 1, False),
        (1, 1.0, True),
        (NAN, NAN, True),
        ({"a": 1, "b": [2]}, {"b": (2,), "a": 1.0}, True),
        ({"a": None}, {}, False),
        ("1", 1, False),
    ],
)
def test_the_rule_on_the_cases_that_matter(exported_same_value, a, b, same):
    assert exported_same_value(a, b) is same
    assert values.same_value(a, b) is same


def test_the_copy_is_the_same_code(exported_same_value):
    """Beyond behaviour: the copy's body is the simulation's, statement for statement (a
    docstring aside), so an edit of one without the other fails here first."""

    def body(func) -> str:
        node = ast.parse(inspect.getsource(func)).body[0]
        statements = node.body[1:] if ast.get_docstring(node) else node.body
        return "\n".join(ast.dump(statement) for statement in statements)

    assert body(exported_same_value) == body(values.same_value)
