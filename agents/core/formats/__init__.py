"""The native format: one JSON or YAML document per app, described by a published JSON Schema.

    {"format": "statecraft.app", "version": 1, "app": {...}}

``to_native`` writes an app (and its scenarios) as that document, ``from_native``
reads it back, validating it against ``NATIVE_SCHEMA`` (draft 2020-12, also in
``docs/native-format.schema.json``) and then checking what a JSON Schema cannot
say: unique names, references between objects, defaults against their types,
Python syntax. ``check_app_spec`` is that second half on its own, for any
``AppSpec`` (the CX importer and the Django import service use it too).

Export then import gives back the same app: ``to_native(from_native(d)) == d``
for every document ``to_native`` writes. Object keys keep their order (a
schema's properties stay where the designer put them).

Fields of diagnostics name the object and the field, by name where there is one:
``variables.customer.default``, ``schemas.Customer.json_schema#/properties/age``,
``agents.Root.callbacks[0].code``, ``agents.Root.scenarios.Happy path.session.values``.

YAML is read with PyYAML's safe loader only (imported when YAML is used; the
rest of the core stays standard library + jsonschema), without aliases (a
"billion laughs" file is refused) and with dates kept as text.
"""

from agents.core import codes
from agents.core.formats.read import MAX_STRUCTURE_DIAGNOSTICS, check_app_spec, from_native
from agents.core.formats.schema import FORMAT_NAME, FORMAT_VERSION, NATIVE_SCHEMA
from agents.core.formats.text import (
    MAX_NATIVE_BYTES,
    MAX_NATIVE_DEPTH,
    dumps_native,
    load_yaml,
    loads_native,
    not_json_data,
)
from agents.core.formats.write import to_native

__all__ = [
    "CODES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_NATIVE_BYTES",
    "MAX_NATIVE_DEPTH",
    "MAX_STRUCTURE_DIAGNOSTICS",
    "NATIVE_SCHEMA",
    "check_app_spec",
    "dumps_native",
    "from_native",
    "load_yaml",
    "loads_native",
    "not_json_data",
    "to_native",
]

CODES: dict[str, str] = codes.section("formats")
