"""Typed values: JSON Schema of a variable, form text in and out, validation, examples."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agents.core.diagnostics import Severity
from agents.core.examples import example_value
from agents.core.form_text import ParsedValue, format_form_value, parse_form_value
from agents.core.spec import VariableSpec, VariableType
from agents.core.types import CODES, json_schema_for, validate_value

T = VariableType

CUSTOMER = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "email": {"type": "string", "format": "email"},
        "address": {"$ref": "#/$defs/Address"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name"],
    "additionalProperties": False,
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["zip"],
        }
    },
}
SCHEMAS = {"Customer": CUSTOMER}


def variable(type: VariableType, **kwargs) -> VariableSpec:
    return VariableSpec(name=kwargs.pop("name", "v"), type=type, **kwargs)


def only_errors(result: ParsedValue) -> tuple[str, ...]:
    assert result.value is None
    return result.errors


# --- json_schema_for ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (variable(T.TEXT), {"type": "string"}),
        (variable(T.NUMBER), {"type": "number"}),
        (variable(T.BOOLEAN), {"type": "boolean"}),
        (variable(T.LIST, item_type=T.NUMBER), {"type": "array", "items": {"type": "number"}}),
        (variable(T.LIST), {"type": "array"}),
        (variable(T.OBJECT, schema="Customer"), CUSTOMER),
        (variable(T.OBJECT, schema="Missing"), {"type": "object"}),
    ],
)
def test_json_schema_for_each_type(spec, expected):
    assert json_schema_for(spec, SCHEMAS) == expected


def test_json_schema_for_object_without_type_says_object():
    schema = json_schema_for(variable(T.OBJECT, schema="S"), {"S": {"properties": {}}})
    assert schema["type"] == "object"


def test_json_schema_for_list_of_objects_keeps_local_refs_working():
    schema = json_schema_for(variable(T.LIST, item_type=T.OBJECT, schema="Customer"), SCHEMAS)
    assert schema["type"] == "array"
    assert schema["items"]["$id"].startswith("urn:statecraft:schema:")
    validator = Draft202012Validator(schema)
    assert validator.is_valid([{"name": "Ada", "address": {"zip": "75001"}}])
    assert not validator.is_valid([{"name": "Ada", "address": {"zip": "x"}}])


# --- parse_form_value: empty, text ----------------------------------------------------------


@pytest.mark.parametrize("type_", list(VariableType))
def test_empty_input_means_no_default(type_):
    assert parse_form_value("", type_, item_type=T.TEXT) == ParsedValue(None, ())


@pytest.mark.parametrize("type_", [T.NUMBER, T.BOOLEAN, T.OBJECT, T.LIST])
def test_blank_input_means_no_default_for_non_text(type_):
    assert parse_form_value("  \n ", type_) == ParsedValue(None, ())


@pytest.mark.parametrize("raw", ["hello", "  padded  ", "a, b", "{{x}}", "   ", "line 1\nline 2"])
def test_text_is_taken_as_typed(raw):
    assert parse_form_value(raw, T.TEXT) == ParsedValue(raw)


# --- numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("3", 3),
        ("-3", -3),
        ("+7", 7),
        (" 42 ", 42),
        ("2.5", 2.5),
        ("-0.25", -0.25),
        (".5", 0.5),
        ("3.", 3.0),
        ("3.0", 3.0),
        ("-1.5e3", -1500.0),
        ("1E-2", 0.01),
        ("12345678901234567890", 12345678901234567890),
    ],
)
def test_numbers(raw, expected):
    result = parse_form_value(raw, T.NUMBER)
    assert result.errors == ()
    assert result.value == expected
    assert type(result.value) is type(expected)


@pytest.mark.parametrize(
    "raw", ["abc", "1,000", "1_000", "0x10", "NaN", "nan", "inf", "-Infinity", "1e", "--1", "1 2"]
)
def test_not_numbers(raw):
    assert only_errors(parse_form_value(raw, T.NUMBER)) == (
        f"'{raw}' is not a number: write it like 1234.5 or -2.5",
    )


def test_number_too_large_for_a_float():
    assert only_errors(parse_form_value("1e999", T.NUMBER)) == ("'1e999' is too large a number",)


# --- Yes/No --------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["yes", "YES", "Yes", "true", "TRUE", "y", "Y", "1", " yes "])
def test_yes(raw):
    assert parse_form_value(raw, T.BOOLEAN) == ParsedValue(True)


@pytest.mark.parametrize("raw", ["no", "NO", "false", "False", "n", "N", "0"])
def test_no(raw):
    assert parse_form_value(raw, T.BOOLEAN) == ParsedValue(False)


@pytest.mark.parametrize("raw", ["maybe", "2", "oui", "yess"])
def test_not_yes_or_no(raw):
    assert only_errors(parse_form_value(raw, T.BOOLEAN)) == (f"'{raw}' is not yes or no",)


# --- lists ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a,b,c", ["a", "b", "c"]),
        ("a, b ,  c", ["a", "b", "c"]),
        ('"Paris, France", Berlin', ["Paris, France", "Berlin"]),
        ('" padded ", x', [" padded ", "x"]),
        ('  "quoted"  , x', ["quoted", "x"]),
        ('"say ""hi"""', ['say "hi"']),
        ('""', [""]),
        ("one", ["one"]),
        ("a\nb, c", ["a", "b", "c"]),
        ('"multi\nline", x', ["multi\nline", "x"]),
        ('ab"c, d', ['ab"c', "d"]),
        ("[]", []),
        ('"[]"', ["[]"]),
    ],
)
def test_text_lists_are_csv(raw, expected):
    assert parse_form_value(raw, T.LIST, item_type=T.TEXT) == ParsedValue(expected)


def test_list_items_are_parsed_as_their_type():
    assert parse_form_value("1, -2.5, 3e2", T.LIST, item_type=T.NUMBER).value == [1, -2.5, 300.0]
    assert parse_form_value("yes, NO, 1", T.LIST, item_type=T.BOOLEAN).value == [True, False, True]


def test_list_item_errors_name_the_item():
    result = parse_form_value("1, 2, abc, maybe", T.LIST, item_type=T.NUMBER)
    assert only_errors(result) == (
        "item 3: 'abc' is not a number: write it like 1234.5 or -2.5",
        "item 4: 'maybe' is not a number: write it like 1234.5 or -2.5",
    )


def test_list_empty_item_is_an_error():
    assert only_errors(parse_form_value("a,,b", T.LIST, item_type=T.TEXT)) == (
        'item 2 is empty (write "" for an empty text)',
    )
    assert only_errors(parse_form_value("1, 2,", T.LIST, item_type=T.NUMBER)) == (
        'item 3 is empty (write "" for an empty text)',
    )


def test_list_quote_errors():
    assert only_errors(parse_form_value('a, "b', T.LIST, item_type=T.TEXT)) == (
        "item 2: the opening quote is never closed",
    )
    assert only_errors(parse_form_value('"a"b, c', T.LIST, item_type=T.TEXT)) == (
        "item 1: unexpected text after the closing quote",
    )


def test_list_written_as_json_gets_a_hint():
    errors = only_errors(parse_form_value("[1, 2]", T.LIST, item_type=T.NUMBER))
    assert errors[-1] == "write the items separated by commas, without brackets"


def test_list_of_lists_is_refused():
    assert only_errors(parse_form_value("a", T.LIST, item_type=T.LIST)) == (
        "a list of lists is not supported",
    )


def test_list_of_objects_is_a_json_array():
    result = parse_form_value('[{"a": 1}, {"b": [2]}]', T.LIST, item_type=T.OBJECT)
    assert result == ParsedValue([{"a": 1}, {"b": [2]}])


def test_list_of_objects_says_how_to_write_it():
    hint = "a list of objects is written as a JSON array: [{...}, {...}]"
    assert only_errors(parse_form_value('{"a": 1}', T.LIST, item_type=T.OBJECT)) == (hint,)
    assert only_errors(parse_form_value("a, b", T.LIST, item_type=T.OBJECT)) == (hint,)


def test_list_of_objects_item_errors():
    assert only_errors(parse_form_value('[{"a": 1}, 2]', T.LIST, item_type=T.OBJECT)) == (
        "item 2: expected a JSON object ({...}), got a number",
    )
    assert only_errors(parse_form_value('[{"a": 1} {}]', T.LIST, item_type=T.OBJECT)) == (
        "line 1, column 11: expected ',' or ']'",
    )


# --- objects -------------------------------------------------------------------------------


def test_object_from_json():
    assert parse_form_value(' {"a": 1, "b": "é"} ', T.OBJECT) == ParsedValue({"a": 1, "b": "é"})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"a": 1\n    "b": 2}', "line 2, column 5: expected ',' or '}'"),
        ('{"a": [1 2]}', "line 1, column 10: expected ',' or ']'"),
        ('{"a": 1,}', "line 1, column 8: remove the comma before }"),
        (
            "{'a': 1}",
            "line 1, column 2: strings and property names take double quotes, not single quotes",
        ),
        ('{"a": 1', "line 1, column 8: expected ',' or '}' (the text ends too early)"),
        ('{"a":', "line 1, column 6: the text ends too early"),
        (
            '{"a" 1}',
            "line 1, column 6: expected ':' after the property name: write \"name\": value",
        ),
        (
            '{"a": 1} x',
            "line 1, column 10: unexpected text after the end of the JSON value: remove it",
        ),
        ('{"a": "b', "line 1, column 7: this string is never closed (missing '\"')"),
        (
            '{"a": x}',
            'line 1, column 7: expected a value: a number, "text", true, false, null, [...] or {...}',
        ),
        (
            '{"tarif_nuit": 100,0}',
            "line 1, column 20: a decimal is written with a point in JSON: 100.0",
        ),
        ('{"a": NaN}', "NaN is not allowed in JSON"),
        ('{"a": 1, "a": 2}', "the property 'a' appears twice"),
        ("[1, 2]", "expected a JSON object ({...}), got a list"),
        ('"text"', "expected a JSON object ({...}), got text"),
    ],
)
def test_object_errors_in_words(raw, message):
    assert only_errors(parse_form_value(raw, T.OBJECT)) == (message,)


def test_deeply_nested_json_does_not_crash():
    result = parse_form_value("[" * 100_000, T.LIST, item_type=T.OBJECT)
    assert result.value is None
    assert result.errors


def test_schema_errors_are_added_when_a_schema_is_given():
    schema = json_schema_for(variable(T.OBJECT, schema="Customer"), SCHEMAS)
    result = parse_form_value('{"name": "", "age": -3}', T.OBJECT, schema=schema)
    assert result.value == {"name": "", "age": -3}
    assert result.errors == (
        "age: -3 is less than the minimum of 0",
        "name: '' is shorter than 1 character",
    )
    numbers = parse_form_value("1, x", T.LIST, item_type=T.NUMBER, schema={"type": "array"})
    assert numbers.errors == ("item 2: 'x' is not a number: write it like 1234.5 or -2.5",)
    capped = parse_form_value(
        "5, 50", T.LIST, item_type=T.NUMBER, schema={"type": "array", "items": {"maximum": 10}}
    )
    assert capped.errors == ("item 2: 50 is more than the maximum of 10",)


# --- format_form_value ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "type_", "item_type", "expected"),
    [
        (None, T.TEXT, None, ""),
        ("hi there", T.TEXT, None, "hi there"),
        (3, T.NUMBER, None, "3"),
        (2.5, T.NUMBER, None, "2.5"),
        (-1500.0, T.NUMBER, None, "-1500.0"),
        (True, T.BOOLEAN, None, "yes"),
        (False, T.BOOLEAN, None, "no"),
        (["a", "b, c", ' q"', ""], T.LIST, T.TEXT, 'a, "b, c", " q""", ""'),
        ([1, 2.5], T.LIST, T.NUMBER, "1, 2.5"),
        ([True, False], T.LIST, T.BOOLEAN, "yes, no"),
        ([], T.LIST, T.TEXT, "[]"),
        ({"a": 1, "b": "é"}, T.OBJECT, None, '{\n  "a": 1,\n  "b": "é"\n}'),
        ([{"a": 1}], T.LIST, T.OBJECT, '[\n  {\n    "a": 1\n  }\n]'),
        ("oops", T.NUMBER, None, '"oops"'),
    ],
)
def test_format_form_value(value, type_, item_type, expected):
    assert format_form_value(value, type_, item_type) == expected


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
numbers = st.integers() | st.floats(allow_nan=False, allow_infinity=False)


def assert_round_trip(value, type_, item_type=None):
    text = format_form_value(value, type_, item_type)
    parsed = parse_form_value(text, type_, item_type=item_type)
    assert parsed.errors == (), text
    assert parsed.value == value, text
    assert [type(x) for x in _leaves(parsed.value)] == [type(x) for x in _leaves(value)]


def _leaves(value):
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1))
def test_round_trip_text(value):
    assert_round_trip(value, T.TEXT)


@settings(max_examples=150, deadline=None)
@given(numbers)
def test_round_trip_number(value):
    assert_round_trip(value, T.NUMBER)


@given(st.booleans())
def test_round_trip_boolean(value):
    assert_round_trip(value, T.BOOLEAN)


@settings(max_examples=100, deadline=None)
@given(json_objects)
def test_round_trip_object(value):
    assert_round_trip(value, T.OBJECT)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.tuples(st.lists(st.text(), max_size=6), st.just(T.TEXT)),
        st.tuples(st.lists(numbers, max_size=6), st.just(T.NUMBER)),
        st.tuples(st.lists(st.booleans(), max_size=6), st.just(T.BOOLEAN)),
        st.tuples(st.lists(json_objects, max_size=3), st.just(T.OBJECT)),
    )
)
def test_round_trip_list(case):
    value, item_type = case
    assert_round_trip(value, T.LIST, item_type)


# --- validate_value ------------------------------------------------------------------------


def messages(diagnostics):
    return [(d.code, d.message) for d in diagnostics]


def test_no_value_is_always_valid():
    assert validate_value(None, variable(T.NUMBER), {}) == ()


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        (T.TEXT, "x"),
        (T.NUMBER, 3),
        (T.NUMBER, -2.5),
        (T.BOOLEAN, False),
        (T.OBJECT, {"name": "Ada"}),
    ],
)
def test_valid_values(type_, value):
    assert validate_value(value, variable(type_, schema="Customer"), SCHEMAS) == ()


@pytest.mark.parametrize(
    ("type_", "value", "message"),
    [
        (T.NUMBER, True, "v: true is not a number"),
        (T.NUMBER, "3", "v: '3' is not a number"),
        (T.TEXT, 3, "v: 3 is not text"),
        (T.BOOLEAN, 1, "v: 1 is not yes or no"),
        (T.BOOLEAN, "yes", "v: 'yes' is not yes or no"),
        (T.OBJECT, [1], "v: [1] is not an object"),
    ],
)
def test_type_mismatch(type_, value, message):
    assert messages(validate_value(value, variable(type_, schema="Customer"), SCHEMAS)) == [
        ("SC201", message)
    ]


def test_object_problems_name_the_path_in_words():
    value = {
        "name": "",
        "age": -3,
        "email": "nope",
        "address": {"zip": "x"},
        "tags": ["a", 2],
        "x": 1,
    }
    found = validate_value(value, variable(T.OBJECT, name="customer", schema="Customer"), SCHEMAS)
    assert messages(found) == [
        ("SC205", "customer: the property 'x' is not allowed"),
        ("SC202", "customer.address.zip: 'x' does not match the pattern '^[0-9]{5}$'"),
        ("SC202", "customer.age: -3 is less than the minimum of 0"),
        ("SC203", "customer.email: 'nope' is not a valid email address"),
        ("SC202", "customer.name: '' is shorter than 1 character"),
        ("SC201", "customer.tags item 2: 2 is not text"),
    ]
    assert all(d.severity is Severity.ERROR for d in found)
    assert {d.field for d in found} == {"variables.customer.default"}
    assert {d.subject for d in found} == {"customer"}


def test_missing_required_property():
    found = validate_value({}, variable(T.OBJECT, name="c", schema="Customer"), SCHEMAS)
    assert messages(found) == [("SC204", "c: the required property 'name' is missing")]


def test_field_can_be_named():
    found = validate_value("x", variable(T.NUMBER), {}, field="scenario.inputs.v")
    assert found[0].field == "scenario.inputs.v"


def test_lists_are_validated_item_by_item():
    found = validate_value([1, "2", 3.5, False], variable(T.LIST, name="n", item_type=T.NUMBER), {})
    assert messages(found) == [
        ("SC201", "n item 2: '2' is not a number"),
        ("SC201", "n item 4: false is not a number"),
    ]
    objects = variable(T.LIST, name="people", item_type=T.OBJECT, schema="Customer")
    assert messages(
        validate_value([{"name": "A"}, {"name": "B", "age": -1}], objects, SCHEMAS)
    ) == [("SC202", "people item 2.age: -1 is less than the minimum of 0")]


@pytest.mark.parametrize(
    ("schema", "value", "code", "words"),
    [
        ({"type": "integer"}, 2.5, "SC201", "2.5 is not a whole number"),
        ({"type": ["string", "null"]}, 1, "SC201", "1 is not text or null"),
        ({"maximum": 10}, 11, "SC202", "11 is more than the maximum of 10"),
        ({"exclusiveMinimum": 0}, 0, "SC202", "0 must be more than 0"),
        ({"exclusiveMaximum": 5}, 5, "SC202", "5 must be less than 5"),
        ({"multipleOf": 5}, 7, "SC202", "7 is not a multiple of 5"),
        ({"maxLength": 2}, "abc", "SC202", "'abc' is longer than 2 characters"),
        ({"enum": ["a", "b"]}, "c", "SC202", "'c' is not one of 'a', 'b'"),
        ({"const": "a"}, "c", "SC202", "must be 'a'"),
        ({"minItems": 2}, [1], "SC202", "has 1 item, at least 2 required"),
        ({"maxItems": 1}, [1, 2], "SC202", "has 2 items, at most 1 allowed"),
        ({"uniqueItems": True}, [1, 1], "SC202", "has the same item more than once"),
        ({"minProperties": 1}, {}, "SC202", "has 0 properties, at least 1 required"),
        (
            {"format": "date"},
            "31/01/2025",
            "SC203",
            "'31/01/2025' is not a valid date (YYYY-MM-DD)",
        ),
        (
            {"format": "uri"},
            "not a uri",
            "SC203",
            "'not a uri' is not a valid absolute URI (https://...)",
        ),
        ({"not": {"type": "string"}}, "x", "SC210", "'x' is a value the schema excludes"),
        (
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            2.5,
            "SC210",
            "2.5 matches none of the allowed alternatives (closest: 2.5 is not text)",
        ),
    ],
)
def test_constraint_messages(schema, value, code, words):
    found = validate_value(
        {"f": value},
        variable(T.OBJECT, name="o", schema="S"),
        {"S": {"type": "object", "properties": {"f": schema}}},
    )
    assert messages(found) == [(code, f"o.f: {words}")]


def test_unknown_schema():
    found = validate_value({}, variable(T.OBJECT, name="o", schema="Nope"), {})
    assert messages(found) == [("SC206", "o: the schema 'Nope' does not exist")]
    found = validate_value({}, variable(T.OBJECT, name="o"), {})
    assert messages(found) == [("SC206", "o: a custom object needs a schema")]


def test_not_json_data():
    assert messages(validate_value(math.nan, variable(T.NUMBER, name="n"), {})) == [
        ("SC209", "n: nan is not a number JSON can hold")
    ]
    assert validate_value({1: "a"}, variable(T.OBJECT, schema="S"), {"S": {}})[0].code == "SC209"
    assert (
        validate_value({"a": {1, 2}}, variable(T.OBJECT, schema="S"), {"S": {}})[0].code == "SC209"
    )


def test_remote_refs_are_never_fetched():
    schemas = {
        "S": {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}}
    }
    found = validate_value({"a": 1}, variable(T.OBJECT, name="o", schema="S"), schemas)
    assert [d.code for d in found] == ["SC207"]
    assert found[0].message.startswith("o: the schema cannot be used to validate")


def test_list_of_lists():
    assert validate_value([[1]], variable(T.LIST, item_type=T.LIST), {})[0].code == "SC208"


def test_many_problems_are_capped():
    found = validate_value(["x"] * 50, variable(T.LIST, name="n", item_type=T.NUMBER), {})
    assert len(found) == 21
    assert (found[-1].code, found[-1].severity, found[-1].message) == (
        "SC211",
        Severity.INFO,
        "n: 30 more problems",
    )


def test_codes_are_documented_and_in_range():
    assert all(re.fullmatch(r"SC2(0[1-9]|1[0-9])", code) for code in CODES)
    source = Path(sys.modules["agents.core.types"].__file__).read_text()
    used = set(re.findall(r'"(SC2\d\d)"', source))
    assert used == set(CODES)


# --- example_value -------------------------------------------------------------------------

COMMON_SCHEMAS = [
    {"type": "string"},
    {"type": "string", "minLength": 12},
    {"type": "string", "maxLength": 3},
    {"type": "string", "pattern": "^[A-Z]+$"},
    {"type": "integer", "minimum": 18, "maximum": 120},
    {"type": "integer", "exclusiveMinimum": 0},
    {"type": "integer", "maximum": -5},
    {"type": "integer", "multipleOf": 7, "minimum": 10},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "number", "minimum": 0.5, "multipleOf": 0.25},
    {"type": "boolean"},
    {"type": "null"},
    {"type": ["string", "null"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 3, "uniqueItems": True},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": False},
    {"type": "array", "maxItems": 0},
    {"enum": ["red", "green"]},
    {"const": 42},
    {"anyOf": [{"type": "string", "format": "email"}, {"type": "null"}]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {
        "allOf": [
            {"properties": {"a": {"type": "string"}}},
            {"properties": {"b": {"type": "number"}}},
        ]
    },
    CUSTOMER,
    {
        "type": "object",
        "properties": {
            "children": {"type": "array", "items": {"$ref": "#"}},
            "name": {"type": "string"},
        },
        "required": ["name"],
    },
] + [
    {"type": "string", "format": fmt}
    for fmt in (
        "date",
        "date-time",
        "time",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "uuid",
        "duration",
        "json-pointer",
        "regex",
        "iri",
    )
]


@pytest.mark.parametrize("schema", COMMON_SCHEMAS)
def test_example_value_is_valid(schema):
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    example = example_value(schema)
    assert not list(validator.iter_errors(example)), example


def test_example_value_prefers_default_examples_const_enum():
    assert example_value({"type": "string", "default": "d", "examples": ["e"]}) == "d"
    assert example_value({"type": "string", "examples": ["e"], "enum": ["x"]}) == "e"
    assert example_value({"const": 3, "enum": [1]}) == 3
    assert example_value({"enum": ["x", "y"]}) == "x"


def test_example_value_builds_objects_with_all_properties():
    assert example_value(CUSTOMER) == {
        "name": "name",
        "age": 0,
        "email": "ada@example.com",
        "address": {"zip": "12345"},
        "tags": ["tags"],
    }


def test_example_value_honours_bounds_and_format():
    assert example_value({"type": "integer", "minimum": 18}) == 18
    assert example_value({"type": "number", "maximum": -2.5}) == -2.5
    assert example_value({"type": "string", "format": "date"}) == "2025-01-31"
    assert len(example_value({"type": "string", "minLength": 20})) == 20


def test_parse_form_value_never_raises_on_odd_input():
    assert parse_form_value(None, T.TEXT).errors  # type: ignore[arg-type]
    assert format_form_value({1, 2}, T.OBJECT) == "{1, 2}"


# --- robustness ----------------------------------------------------------------------------

schema_like = st.recursive(
    st.booleans()
    | st.dictionaries(
        st.sampled_from(
            ["type", "enum", "const", "minimum", "maxLength", "pattern", "format", "required",
             "items", "properties", "$ref", "anyOf", "default", "minItems", "multipleOf"]
        ),
        json_values,
        max_size=4,
    ),
    lambda c: st.dictionaries(st.sampled_from(["items", "not", "properties"]), c, max_size=2),
    max_leaves=8,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=40), st.sampled_from(list(VariableType)), st.sampled_from(list(VariableType))
)
def test_parse_form_value_never_raises(raw, type_, item_type):
    result = parse_form_value(raw, type_, item_type=item_type)
    assert result.value is None or not result.errors


@settings(max_examples=150, deadline=None)
@given(json_values, schema_like)
def test_validate_and_example_never_raise(value, schema):
    schemas = {"S": schema if isinstance(schema, dict) else {}}
    for spec in (variable(T.OBJECT, schema="S"), variable(T.LIST, item_type=T.OBJECT, schema="S")):
        assert all(d.code in CODES for d in validate_value(value, spec, schemas))
    example_value(schema)


_PLAIN_SCHEMAS = [
    {"type": "string"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "array"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"type": "number"}},
    {"type": "array", "items": {"type": "boolean"}},
]
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(schema=st.sampled_from(_PLAIN_SCHEMAS), value=_JSON_VALUES)
def test_the_plain_types_fast_check_agrees_with_jsonschema(schema, value):
    from agents.core.types import _plainly_valid, value_schema_problems

    valid = Draft202012Validator(schema).is_valid(value)
    assert _plainly_valid(value, schema) == valid  # decided without jsonschema
    assert (value_schema_problems(value, schema, root_name="x") == []) == valid


@pytest.mark.parametrize("items_type", [[], ["string"], {"x": 1}])
def test_a_list_whose_items_type_is_not_a_name_is_checked_by_jsonschema(items_type):
    # The plain-type shortcut knows only `"type": "<name>"`: anything else goes to
    # jsonschema (hypothesis found `{"type": []}` raising TypeError in the shortcut).
    schemas = {"S": {"type": "array", "items": {"type": items_type}}}
    spec = variable(T.OBJECT, schema="S")
    assert all(d.code in CODES for d in validate_value([], spec, schemas))
