"""Custom-object schemas: safety checks, and conversion to and from CX Agent Studio's Schema."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.core.cx.schema_from_cx import from_cx_schema
from agents.core.cx.schema_to_cx import CODES as CX_CODES
from agents.core.cx.schema_to_cx import to_cx_schema
from agents.core.cx.variables import CxVariable, variable_cx_schema, variable_from_cx_schema
from agents.core.diagnostics import Severity
from agents.core.schemas import CODES as CHECK_CODES
from agents.core.schemas import check_schema
from agents.core.spec import VariableSpec, VariableType
from agents.core.types import CODES as TYPE_CODES
from tests import optional

CODES = {**CHECK_CODES, **CX_CODES}

T = VariableType

CUSTOMER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "title": "Customer",
    "description": "Who we talk to",
    "properties": {
        "name": {"type": "string", "description": "Full name"},
        "age": {"type": ["integer", "null"], "minimum": 0, "maximum": 150},
        "tier": {"type": "string", "enum": ["gold", "silver"], "default": "silver"},
        "pet": {"$ref": "#/$defs/Pet"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
    },
    "required": ["name"],
    "$defs": {"Pet": {"type": "object", "properties": {"kind": {"type": "string"}}}},
}


def parses_as_cx(out: dict) -> None:
    """Raises unless `out` is valid JSON for google.cloud.ces.v1.Schema."""
    optional.ces_v1().Schema.from_json(json.dumps(out))


def codes(diagnostics) -> list[tuple[str, str | None]]:
    return [(d.code, d.field) for d in diagnostics]


# --- check_schema --------------------------------------------------------------------------


def test_a_good_schema_has_no_problems():
    assert check_schema(CUSTOMER) == ()


@pytest.mark.parametrize("schema", [None, [], "x", 3, True])
def test_schema_must_be_an_object(schema):
    found = check_schema(schema)
    assert [(d.code, d.severity) for d in found] == [("SC220", Severity.ERROR)]


def test_metaschema_errors_name_the_path():
    found = check_schema(
        {"type": "object", "properties": {"a": {"type": "strin"}, "b": {"minimum": "x"}}}
    )
    assert [(d.code, d.message) for d in found] == [
        (
            "SC222",
            "#/properties/a/type: 'strin' is not one of "
            "'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'",
        ),
        ("SC222", "#/properties/b/minimum: 'x' is not a number"),
    ]


def test_remote_refs_are_refused():
    found = check_schema(
        {
            "type": "object",
            "properties": {
                "a": {"$ref": "https://example.com/a.json"},
                "b": {"$ref": "other.json#/x"},
            },
        }
    )
    assert codes(found) == [("SC223", "#/properties/a/$ref"), ("SC223", "#/properties/b/$ref")]
    assert "never fetched" in found[0].message


def test_local_refs_must_resolve():
    schema = {
        "type": "object",
        "properties": {
            "ok": {"$ref": "#/$defs/A"},
            "root": {"$ref": "#"},
            "anchor": {"$ref": "#here"},
            "missing": {"$ref": "#/$defs/B"},
        },
        "$defs": {"A": {"$anchor": "here", "type": "string"}},
    }
    assert codes(check_schema(schema)) == [("SC224", "#/properties/missing/$ref")]


def test_ref_inside_data_is_not_a_reference():
    schema = {
        "type": "object",
        "default": {"$ref": "http://x"},
        "enum": [{"$ref": "y"}],
        "properties": {"pattern": {"type": "string"}},
    }
    assert check_schema(schema) == ()


def test_depth_limit():
    schema: dict = {"type": "object"}
    for _ in range(20):
        schema = {"type": "object", "properties": {"a": schema}}
    assert codes(check_schema(schema))[0][0] == "SC225"
    shallow: dict = {"type": "string"}
    for _ in range(14):
        shallow = {"type": "object", "properties": {"a": shallow}}
    assert check_schema(shallow) == ()


def test_extreme_nesting_does_not_crash():
    schema: dict = {}
    for _ in range(50_000):
        schema = {"not": schema}
    assert codes(check_schema({"type": "object", "not": schema}))[0][0] in {"SC225", "SC226"}


def test_size_limits():
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(3_000)}}
    assert [d.code for d in check_schema(many)] == ["SC226"]
    big = {"type": "object", "description": "x" * (256 * 1024)}
    found = check_schema(big)
    assert [d.code for d in found] == ["SC226"]
    assert "KB" in found[0].message


def test_not_json_data():
    assert [d.code for d in check_schema({"type": "object", "default": float("nan")})] == ["SC221"]
    assert [d.code for d in check_schema({"type": "object", "default": {1: 2}})] == ["SC221"]
    assert [d.code for d in check_schema({"type": "object", "default": {1, 2}})] == ["SC221"]


def test_invalid_regexes():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "pattern": "(unclosed"}},
        "patternProperties": {"[a-": {}},
    }
    found = check_schema(schema)
    assert codes(found) == [
        ("SC227", "#/patternProperties/[a-"),
        ("SC227", "#/properties/a/pattern"),
    ]
    assert "is not a valid regular expression" in found[0].message


@pytest.mark.parametrize(
    "pattern", [r"^(a+)+$", r"(\w+\s?)*x", r"^([a-z]+-?)*$", r"(?:\d*)+", r"(a{1,})+"]
)
def test_slow_regex_is_refused(pattern):
    found = check_schema({"type": "object", "properties": {"a": {"pattern": pattern}}})
    assert [(d.code, d.severity) for d in found] == [("SC228", Severity.ERROR)]
    assert "refused" in found[0].message


@pytest.mark.parametrize(
    "pattern", [r"^[a-z]+(-[a-z]+)*$", r"^(\d+,)*\d+$", r"^[A-Z]{2}\d{4}$", r"(ab)+", r"[(a+)+]"]
)
def test_ordinary_regex_has_no_warning(pattern):
    assert check_schema({"type": "object", "properties": {"a": {"pattern": pattern}}}) == ()


def test_other_dialect_warning():
    found = check_schema({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})
    assert [(d.code, d.severity) for d in found] == [("SC229", Severity.WARNING)]


@pytest.mark.parametrize("schema", [{}, {"type": "array"}, {"type": ["object", "null"]}])
def test_top_should_be_an_object(schema):
    found = check_schema(schema)
    assert [(d.code, d.severity, d.field) for d in found] == [("SC230", Severity.WARNING, "#/type")]


# --- to_cx_schema --------------------------------------------------------------------------


def test_customer_to_cx():
    out, found = to_cx_schema(CUSTOMER)
    parses_as_cx(out)
    assert out == {
        "type": "OBJECT",
        "title": "Customer",
        "description": "Who we talk to",
        "properties": {
            "name": {"type": "STRING", "description": "Full name"},
            "age": {"type": "INTEGER", "nullable": True, "minimum": 0, "maximum": 150},
            "tier": {"type": "STRING", "enum": ["gold", "silver"], "default": "silver"},
            "pet": {"ref": "#/defs/Pet"},
            "tags": {
                "type": "ARRAY",
                "items": {"type": "STRING"},
                "minItems": 1,
                "uniqueItems": True,
            },
        },
        "required": ["name"],
        "defs": {"Pet": {"type": "OBJECT", "properties": {"kind": {"type": "STRING"}}}},
    }
    assert [(d.code, d.severity, d.field) for d in found] == [("SC233", Severity.INFO, "#/$schema")]


UNSUPPORTED = [
    ("format", "email"),
    ("pattern", "^a"),
    ("minLength", 1),
    ("maxLength", 9),
    ("multipleOf", 2),
    ("exclusiveMinimum", 0.5),
    ("exclusiveMaximum", 9.5),
    ("allOf", [{"type": "string"}]),
    ("not", {"type": "number"}),
    ("if", {"type": "string"}),
    ("then", {"type": "string"}),
    ("else", {"type": "string"}),
    ("patternProperties", {"^x": {"type": "string"}}),
    ("dependentRequired", {"a": ["b"]}),
    ("dependentSchemas", {"a": {"required": ["b"]}}),
    ("propertyNames", {"maxLength": 3}),
    ("minProperties", 1),
    ("maxProperties", 3),
    ("contains", {"type": "string"}),
    ("minContains", 1),
    ("maxContains", 2),
    ("unevaluatedItems", False),
    ("unevaluatedProperties", False),
]


@pytest.mark.parametrize(("keyword", "value"), UNSUPPORTED)
def test_keywords_without_cx_equivalent_are_reported_with_their_pointer(keyword, value):
    schema = {"type": "object", "properties": {"p": {"type": "number", keyword: value}}}
    out, found = to_cx_schema(schema)
    parses_as_cx(out)
    assert out == {"type": "OBJECT", "properties": {"p": {"type": "NUMBER"}}}
    assert [(d.code, d.severity, d.field) for d in found] == [
        ("SC232", Severity.WARNING, f"#/properties/p/{keyword}")
    ]
    assert (
        found[0].message
        == f"#/properties/p/{keyword}: {keyword} has no CX equivalent; not exported"
    )


@pytest.mark.parametrize(
    "keyword", ["$comment", "examples", "readOnly", "writeOnly", "deprecated", "$id"]
)
def test_annotations_are_reported_as_info(keyword):
    out, found = to_cx_schema({"type": "string", keyword: "x" if keyword != "examples" else ["x"]})
    assert out == {"type": "STRING"}
    assert [(d.code, d.severity, d.field) for d in found] == [
        ("SC233", Severity.INFO, f"#/{keyword}")
    ]


def test_unknown_keys_are_reported():
    out, found = to_cx_schema({"type": "string", "x-widget": "textarea", "definitions": {}})
    assert out == {"type": "STRING"}
    assert codes(found) == [("SC234", "#/x-widget"), ("SC234", "#/definitions")]


@pytest.mark.parametrize(
    ("schema", "expected", "diagnostics"),
    [
        ({"type": ["string", "null"]}, {"type": "STRING", "nullable": True}, []),
        ({"type": ["null", "number"]}, {"type": "NUMBER", "nullable": True}, []),
        ({"type": "null"}, {"nullable": True}, [("SC237", "#/type")]),
        (
            {"type": ["string", "integer"]},
            {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
            [("SC237", "#/type")],
        ),
        ({"const": "x"}, {"type": "STRING", "enum": ["x"]}, [("SC238", "#")]),
        ({"type": "string", "const": "x"}, {"type": "STRING", "enum": ["x"]}, []),
        ({"type": "integer", "enum": [101, 201]}, {"type": "INTEGER", "enum": ["101", "201"]}, []),
        ({"type": "number", "enum": [1, 2.5]}, {"type": "NUMBER", "enum": ["1", "2.5"]}, []),
        ({"type": "boolean", "enum": [True]}, {"type": "BOOLEAN", "enum": ["true"]}, []),
        ({"enum": [1, 2]}, {"type": "INTEGER", "enum": ["1", "2"]}, [("SC238", "#")]),
        ({"enum": [1, "a"]}, {}, [("SC236", "#/enum")]),
        (
            {"type": "object", "enum": [{"a": 1}]},
            {"type": "OBJECT", "enum": []},
            [("SC236", "#/enum")],
        ),
        (
            {"type": ["string", "null"], "enum": ["a", None]},
            {"type": "STRING", "nullable": True, "enum": ["a"]},
            [("SC236", "#/enum")],
        ),
        (
            {"type": "string", "enum": ["a", 1]},
            {"type": "STRING", "enum": ["a"]},
            [("SC236", "#/enum")],
        ),
        (
            {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
            {"type": "INTEGER", "minimum": 1, "maximum": 9},
            [("SC242", "#/exclusiveMinimum"), ("SC242", "#/exclusiveMaximum")],
        ),
        (
            {"oneOf": [{"type": "string"}, {"type": "number"}]},
            {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]},
            [("SC243", "#/oneOf")],
        ),
        ({"type": "array", "items": True}, {"type": "ARRAY"}, []),
        ({"type": "array", "items": False}, {"type": "ARRAY"}, [("SC235", "#/items")]),
        (
            {"type": "object", "additionalProperties": False},
            {"type": "OBJECT"},
            [("SC235", "#/additionalProperties")],
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"type": "OBJECT", "additionalProperties": {"type": "INTEGER"}},
            [],
        ),
        (
            {"type": "object", "properties": {"a": True}},
            {"type": "OBJECT", "properties": {"a": {}}},
            [("SC239", "#/properties/a")],
        ),
        (
            {"properties": {"a": {"type": "string"}}},
            {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
            [("SC238", "#")],
        ),
        ({"description": "anything"}, {"description": "anything"}, [("SC239", "#")]),
        (
            {"type": "array", "minItems": 0, "maxItems": 0},
            {"type": "ARRAY"},
            [("SC232", "#/maxItems")],
        ),
        (
            {"type": "number", "minimum": "x", "maximum": True},
            {"type": "NUMBER"},
            [("SC244", "#/minimum"), ("SC244", "#/maximum")],
        ),
        ({"type": "string", "title": 3}, {"type": "STRING"}, [("SC244", "#/title")]),
        ({"type": "strin"}, {}, [("SC244", "#/type")]),
        (
            {"type": "array", "uniqueItems": False, "prefixItems": [{"type": "string"}, False]},
            {"type": "ARRAY", "prefixItems": [{"type": "STRING"}, {}]},
            [("SC235", "#/prefixItems/1")],
        ),
    ],
)
def test_to_cx_conversions(schema, expected, diagnostics):
    out, found = to_cx_schema(schema)
    parses_as_cx(out)
    assert out == expected
    assert codes(found) == diagnostics


def test_refs_and_defs():
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A", "description": "the A"},
            "self": {"$ref": "#"},
            "deep": {"$ref": "#/properties/a"},
            "nested": {"type": "object", "$defs": {"B": {"type": "string"}}},
        },
        "$defs": {"A": {"type": "string"}},
    }
    out, found = to_cx_schema(schema)
    parses_as_cx(out)
    assert out["properties"]["a"] == {"description": "the A", "ref": "#/defs/A"}
    assert out["properties"]["self"] == {}
    assert out["defs"] == {"A": {"type": "STRING"}}
    assert codes(found) == [
        ("SC240", "#/properties/self/$ref"),
        ("SC240", "#/properties/deep/$ref"),
        ("SC241", "#/properties/nested/$defs"),
    ]


def test_not_an_object():
    assert to_cx_schema([]) == ({}, to_cx_schema([])[1])  # type: ignore[arg-type]
    assert to_cx_schema([])[1][0].code == "SC220"  # type: ignore[arg-type]


# --- from_cx_schema ------------------------------------------------------------------------


def test_customer_round_trip_example():
    out, _ = to_cx_schema(CUSTOMER)
    back, found = from_cx_schema(out)
    assert found == ()
    assert back == {key: value for key, value in CUSTOMER.items() if key != "$schema"}


def test_from_cx_reads_what_protobuf_prints():
    """proto-plus prints enum numbers, proto defaults, int64 as text and floats for numbers."""
    cx, _ = to_cx_schema(CUSTOMER)
    Schema = optional.ces_v1().Schema
    printed = json.loads(Schema.to_json(Schema.from_json(json.dumps(cx))))
    back, found = from_cx_schema(printed)
    assert found == ()
    assert back == {key: value for key, value in CUSTOMER.items() if key != "$schema"}


def test_from_cx_accepts_proto_field_names_and_enum_names():
    cx = {
        "type_": "ARRAY",
        "items": {"type": "INTEGER", "enum": ["101", "x"]},
        "min_items": "2",
        "unique_items": True,
        "prefix_items": [{"type": 4}],
        "any_of": [{"type": "STRING"}],
    }
    back, found = from_cx_schema(cx)
    assert found == ()
    assert back == {
        "type": "array",
        "items": {"type": "integer", "enum": [101, "x"]},
        "prefixItems": [{"type": "boolean"}],
        "minItems": 2,
        "uniqueItems": True,
        "anyOf": [{"type": "string"}],
    }


@pytest.mark.parametrize(
    ("ref", "expected"),
    [("#/defs/Pet", "#/$defs/Pet"), ("Pet", "#/$defs/Pet"), ("#/$defs/Pet", "#/$defs/Pet")],
)
def test_from_cx_refs(ref, expected):
    assert from_cx_schema({"ref": ref}) == ({"$ref": expected}, ())


def test_from_cx_reports_what_it_cannot_read():
    back, found = from_cx_schema(
        {
            "type": "DATE",
            "format": "date",
            "minItems": -1,
            "ref": "#/x/y",
            "properties": {"a": {"pattern": "x"}},
            "nullable": "yes",
        }
    )
    assert back == {"properties": {"a": {}}}
    assert sorted(codes(found)) == [
        ("SC246", "#/format"),
        ("SC246", "#/properties/a/pattern"),
        ("SC247", "#/minItems"),
        ("SC247", "#/nullable"),
        ("SC247", "#/ref"),
        ("SC247", "#/type"),
    ]
    assert from_cx_schema("x")[1][0].code == "SC220"  # type: ignore[arg-type]


# --- round trip, property-based ------------------------------------------------------------

texts = st.text(min_size=1, max_size=10)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_~/ ", min_size=1, max_size=8)
ints = st.integers(min_value=-(10**12), max_value=10**12)
floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
json_scalars = st.none() | st.booleans() | ints | floats | st.text(max_size=6)
json_data = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=6,
)


@st.composite
def annotated(draw, base: dict) -> dict:
    schema = dict(base)
    if draw(st.booleans()):
        schema["title"] = draw(texts)
    if draw(st.booleans()):
        schema["description"] = draw(texts)
    if draw(st.booleans()):
        schema["default"] = draw(json_data)
    if draw(st.booleans()) and isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
    return schema


@st.composite
def scalar_schema(draw) -> dict:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean"]))
    schema: dict = {"type": kind}
    if kind == "string" and draw(st.booleans()):
        schema["enum"] = draw(st.lists(st.text(max_size=6), min_size=1, max_size=4, unique=True))
    if kind in {"integer", "number"}:
        values = ints if kind == "integer" else ints | floats
        for bound in ("minimum", "maximum"):
            if draw(st.booleans()):
                schema[bound] = draw(values)
        if draw(st.booleans()):
            schema["enum"] = draw(st.lists(values, min_size=1, max_size=4, unique=True))
    if kind == "boolean" and draw(st.booleans()):
        schema["enum"] = draw(st.lists(st.booleans(), min_size=1, max_size=2, unique=True))
    return draw(annotated(schema))


def compound(children):
    @st.composite
    def build(draw) -> dict:
        shape = draw(st.sampled_from(["object", "array", "anyOf"]))
        if shape == "object":
            properties = draw(st.dictionaries(names, children, min_size=1, max_size=4))
            schema: dict = {"type": "object", "properties": properties}
            if draw(st.booleans()):
                schema["required"] = draw(
                    st.lists(st.sampled_from(sorted(properties)), min_size=1, unique=True)
                )
            if draw(st.booleans()):
                schema["additionalProperties"] = draw(children)
        elif shape == "array":
            schema = {"type": "array"}
            if draw(st.booleans()):
                schema["items"] = draw(children)
            if draw(st.booleans()):
                schema["prefixItems"] = draw(st.lists(children, min_size=1, max_size=3))
            for bound in ("minItems", "maxItems"):
                if draw(st.booleans()):
                    schema[bound] = draw(st.integers(min_value=1, max_value=100))
            if draw(st.booleans()):
                schema["uniqueItems"] = True
        else:
            schema = {"anyOf": draw(st.lists(children, min_size=1, max_size=3))}
        return draw(annotated(schema))

    return build()


supported_schemas = st.recursive(
    scalar_schema() | st.just({"$ref": "#/$defs/Item"}),
    compound,
    max_leaves=10,
)


@st.composite
def root_schemas(draw) -> dict:
    root = dict(draw(compound(supported_schemas)))
    root["$defs"] = {
        "Item": draw(scalar_schema()),
        **draw(st.dictionaries(names, scalar_schema(), max_size=2)),
    }
    return root


@settings(max_examples=120, deadline=None)
@given(root_schemas())
def test_round_trip_json_cx_json(schema):
    cx, found = to_cx_schema(schema)
    assert found == ()
    parses_as_cx(cx)
    back, found = from_cx_schema(cx)
    assert found == ()
    assert back == schema


@settings(max_examples=60, deadline=None)
@given(root_schemas())
def test_round_trip_through_protobuf(schema):
    """What CX prints back (after a real protobuf parse) converts to the same schema."""
    cx, _ = to_cx_schema(schema)
    Schema = optional.ces_v1().Schema
    printed = json.loads(Schema.to_json(Schema.from_json(json.dumps(cx))))
    back, found = from_cx_schema(printed)
    assert found == ()
    assert back == schema  # protobuf prints numbers as floats: 1.0 == 1


@settings(max_examples=80, deadline=None)
@given(
    st.recursive(
        st.booleans()
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "enum",
                    "const",
                    "pattern",
                    "minimum",
                    "items",
                    "properties",
                    "anyOf",
                    "oneOf",
                    "$ref",
                    "$defs",
                    "default",
                    "required",
                    "maxItems",
                    "x",
                ]
            ),
            json_data,
            max_size=4,
        ),
        lambda c: (
            st.dictionaries(
                st.sampled_from(["items", "not", "additionalProperties"]), c, max_size=2
            )
            | st.fixed_dictionaries({"properties": st.dictionaries(names, c, max_size=2)})
            | st.fixed_dictionaries({"anyOf": st.lists(c, max_size=2)})
        ),
        max_leaves=8,
    )
)
def test_to_cx_output_always_parses(schema):
    if not isinstance(schema, dict):
        schema = {"items": schema}
    cx, _ = to_cx_schema(schema)
    parses_as_cx(cx)
    from_cx_schema(cx)


# --- variables -----------------------------------------------------------------------------

SCHEMAS = {"Customer": CUSTOMER}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (VariableSpec("t", T.TEXT), {"type": "STRING"}),
        (VariableSpec("t", T.TEXT, default="hi"), {"type": "STRING", "default": "hi"}),
        (VariableSpec("n", T.NUMBER, default=3), {"type": "NUMBER", "default": 3}),
        (VariableSpec("b", T.BOOLEAN, default=False), {"type": "BOOLEAN", "default": False}),
        (
            VariableSpec("l", T.LIST, item_type=T.NUMBER, default=[1, 2]),
            {"type": "ARRAY", "default": [1, 2], "items": {"type": "NUMBER"}},
        ),
    ],
)
def test_variable_cx_schema_plain(spec, expected):
    out, found = variable_cx_schema(spec, SCHEMAS)
    assert (out, found) == (expected, ())
    parses_as_cx(out)


def test_variable_cx_schema_object_and_list_of_objects():
    customer = VariableSpec("customer", T.OBJECT, schema="Customer", default={"name": "Ada"})
    out, found = variable_cx_schema(customer, SCHEMAS)
    assert out["type"] == "OBJECT" and out["default"] == {"name": "Ada"} and "defs" in out
    assert [(d.code, d.subject) for d in found] == [("SC233", "Customer")]
    people = VariableSpec("people", T.LIST, item_type=T.OBJECT, schema="Customer")
    out, _ = variable_cx_schema(people, SCHEMAS)
    assert out["type"] == "ARRAY"
    assert "defs" not in out["items"]
    assert out["defs"] == {"Pet": {"type": "OBJECT", "properties": {"kind": {"type": "STRING"}}}}
    assert out["items"]["properties"]["pet"] == {"ref": "#/defs/Pet"}
    app = {"variableDeclarations": [{"name": "people", "description": "d", "schema": out}]}
    ces = optional.ces_v1()
    declaration = ces.App.from_json(json.dumps(app)).variable_declarations[0]
    assert declaration.schema.type_ == ces.Schema.Type.ARRAY


def test_variable_cx_schema_problems():
    out, found = variable_cx_schema(VariableSpec("o", T.OBJECT, schema="Nope"), SCHEMAS)
    assert out == {"type": "OBJECT"}
    assert [(d.code, d.severity) for d in found] == [("SC248", Severity.ERROR)]
    out, found = variable_cx_schema(VariableSpec("l", T.LIST), SCHEMAS)
    assert out == {"type": "ARRAY"}
    assert [(d.code, d.severity) for d in found] == [("SC249", Severity.WARNING)]
    _, found = variable_cx_schema(VariableSpec("l", T.LIST, item_type=T.LIST), SCHEMAS)
    assert [(d.code, d.severity) for d in found] == [("SC249", Severity.ERROR)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (VariableSpec("t", T.TEXT, default="hi"), CxVariable(T.TEXT, default="hi")),
        (VariableSpec("n", T.NUMBER), CxVariable(T.NUMBER)),
        (VariableSpec("b", T.BOOLEAN, default=True), CxVariable(T.BOOLEAN, default=True)),
        (VariableSpec("l", T.LIST, item_type=T.BOOLEAN), CxVariable(T.LIST, T.BOOLEAN)),
        (
            VariableSpec("c", T.OBJECT, schema="Customer", default={"name": "A"}),
            CxVariable(
                T.OBJECT, None, {k: v for k, v in CUSTOMER.items() if k != "$schema"}, {"name": "A"}
            ),
        ),
        (
            VariableSpec("p", T.LIST, item_type=T.OBJECT, schema="Customer"),
            CxVariable(T.LIST, T.OBJECT, {k: v for k, v in CUSTOMER.items() if k != "$schema"}),
        ),
    ],
)
def test_variable_round_trip_through_cx(spec, expected):
    out, _ = variable_cx_schema(spec, SCHEMAS)
    variable, found = variable_from_cx_schema(out)
    assert found == ()
    assert variable == expected


def test_variable_from_cx_reports_lost_constraints():
    variable, found = variable_from_cx_schema({"type": "STRING", "enum": ["a"]})
    assert variable == CxVariable(T.TEXT)
    assert [(d.code, d.field) for d in found] == [("SC245", "#")]


# --- codes ---------------------------------------------------------------------------------


def test_codes_are_documented_in_range_and_do_not_collide():
    assert all(re.fullmatch(r"SC2(2\d|3\d|4\d)", code) for code in CODES)
    assert not set(CODES) & set(TYPE_CODES)
    cx_modules = ("schema_to_cx", "schema_from_cx", "variables")
    for names, codes in (
        (("agents.core.schemas",), CHECK_CODES),
        (tuple(f"agents.core.cx.{name}" for name in cx_modules), CX_CODES),
    ):
        source = "".join(Path(sys.modules[name].__file__).read_text() for name in names)
        used = set(re.findall(r'"(SC2\d\d)"', source))
        assert set(codes) <= used <= set(CODES), names


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=12), json_data, max_size=5) | json_data)
def test_nothing_raises_on_arbitrary_json(data):
    assert all(d.code in CODES for d in check_schema(data))
    cx, _ = to_cx_schema(data)
    parses_as_cx(cx)
    from_cx_schema(data)
    variable_from_cx_schema(data)


def test_from_cx_schema_reports_a_type_that_is_a_list_or_object():
    for bad in (["STRING"], {"x": 1}):
        schema, diagnostics = from_cx_schema({"type": bad})
        assert "type" not in schema
        assert any(d.code == "SC247" for d in diagnostics)
