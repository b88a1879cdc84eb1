"""The one registry of diagnostic codes: every code the product can emit, with its meaning.

`Diagnostic` refuses a code that is not here (so no code is emitted undocumented); the
docs/reference/diagnostics.md's table is checked against this table, row for row
(tests/test_docs.py; ``python -m agents.core.codes`` prints the table). The sections
name the module that emits the codes; each module's ``CODES`` is its section.
"""

# ruff: noqa: E501 (a table of one-line meanings)
from __future__ import annotations

SECTIONS: dict[str, dict[str, str]] = {
    "rules": {
        "SC001": "A field has a value the object cannot be saved with.",
        "SC002": "Someone else saved the object since you opened it (no lost update).",
        "SC003": "A name is missing, too long or has characters a name cannot have.",
        "SC004": "A name is already used in this app.",
        "SC005": "An unknown variable type, tool kind or callback kind.",
        "SC006": "A custom object has no schema, or a schema of another app.",
        "SC007": "Python code of a tool or callback does not parse.",
        "SC008": "A JSON field has the wrong shape (object expected).",
        "SC009": "A scenario setting is out of range (budget, channel, modality, clock).",
        "SC010": "A scenario sets a variable the app does not declare.",
        "SC011": "A platform tool is not one CX Agent Studio provides (`end_session`, `customize_response`).",
        "SC012": "A scenario expects, scripts or mocks a call of a tool no agent of the app has (the closest name is suggested).",
    },
    "parse": {
        "SC101": "Wrong reference syntax, e.g. `{TOOL: x}` or `${x}`; the message gives the fix.",
        "SC102": "`{{` is never closed by `}}`, so it is not a static reference.",
        "SC103": "`$context` in instructions: built-in session values are for tools only.",
        "SC104": '`{{prénom}}`, `{{"…"}}`: looks like a static reference but is not one (names are '
        "ASCII letters, digits and `_`); it stays as written.",
        "SC110": "Unknown or malformed `{% %}` tag (only if, elif, else, endif exist).",
        "SC111": "`{% if %}` without a matching `{% endif %}`.",
        "SC112": "`{% endif %}` without an open `{% if %}`.",
        "SC113": "`{% elif %}` or `{% else %}` without an open `{% if %}`.",
        "SC114": "`{% elif %}` or a second `{% else %}` after `{% else %}`.",
        "SC115": "A `{% if %}` or `{% elif %}` condition that is missing or cannot be read.",
        "SC116": "`{%` without a closing `%}` on the same line.",
        "SC120": "Static reference `{{x}}` to a variable with no value: it stays as written.",
        "SC121": "Static reference `{{a.b}}` to a path that does not exist: it stays as written.",
        "SC122": "An `{% if %}`/`{% elif %}` condition reads a variable with no value (it sees none).",
    },
    "types": {
        "SC201": "A value is not of the type its variable or schema requires.",
        "SC202": "A value breaks a schema constraint (minimum, length, pattern, enum, ...).",
        "SC203": "A text value does not have the format its schema asks for (date, email, ...).",
        "SC204": "An object value lacks a property its schema requires.",
        "SC205": "An object value has a property its schema does not allow.",
        "SC206": "A custom-object variable names no schema, or a schema the app does not have.",
        "SC207": "The schema cannot be used to validate (invalid, or a $ref that does not resolve).",
        "SC208": "A list variable has an item type that is not allowed (a list of lists).",
        "SC209": "A value is not JSON data (NaN, infinity, a set, a non-text key, ...).",
        "SC210": "A value matches none of the alternatives its schema allows (anyOf/oneOf/not).",
        "SC211": "More problems were found than are listed.",
    },
    "schemas": {
        "SC220": "The schema (or CX schema) is not a JSON object.",
        "SC221": "The schema is not JSON data (NaN, infinity, a non-text key, ...).",
        "SC222": "The schema breaks the draft 2020-12 metaschema.",
        "SC223": "A $ref points outside the schema; remote references are never fetched.",
        "SC224": "A local $ref points to nothing in the schema.",
        "SC225": "The schema is nested more than 32 levels deep.",
        "SC226": "The schema is too large (over 256 KB or 5,000 values).",
        "SC227": "A pattern (or patternProperties key) is not a valid regular expression.",
        "SC228": "A pattern repeats a group that repeats or has overlapping alternatives (`(a+)+`, `(a|ab)*`, `(\\w|\\d)+`; very slow on some texts): refused; the check is a heuristic. Patterns are also matched with a 0.1 s limit wherever values are validated.",
        "SC229": "The schema declares a $schema other than draft 2020-12; it is read as 2020-12.",
        "SC230": 'A custom-object schema should say "type": "object" at the top.',
    },
    "cx_schemas": {
        "SC232": "A JSON Schema keyword has no CX equivalent and is left out of the export.",
        "SC233": "An annotation ($schema, $comment, examples, ...) has no CX equivalent; left out.",
        "SC234": "A key that is not a draft 2020-12 keyword is left out of the export.",
        "SC235": "A true/false schema cannot be expressed in CX; left out.",
        "SC236": "An enum or const value cannot be expressed in CX (CX enums hold text); left out.",
        "SC237": "A type list is converted: null becomes nullable, several types become anyOf.",
        "SC238": "A schema without a type gets the type its keywords imply.",
        "SC239": "A schema has no type and none can be implied; CX requires one.",
        "SC240": "A $ref that is not #/$defs/<name> at the root cannot be expressed in CX.",
        "SC241": "$defs below the root cannot be expressed in CX (CX allows defs only at the root).",
        "SC242": "A keyword is converted to an exact CX equivalent (exclusive bound of an integer).",
        "SC243": "A keyword is approximated in CX (oneOf exported as anyOf).",
        "SC244": "A keyword has a value of the wrong kind and is left out.",
        "SC245": "A CX variable of a plain type has constraints that a plain variable cannot keep.",
        "SC246": "A CX schema has a field that CX's Schema message does not have; ignored.",
        "SC247": "A CX schema field has a value of the wrong kind; ignored.",
        "SC248": "A custom-object variable names no schema, or one the app does not have.",
        "SC249": "A list variable has no item type, or a list item type (lists of lists).",
    },
    "lint": {
        "SC301": "Static reference `{{x}}` to an undeclared variable (it stays as written).",
        "SC302": "Dynamic reference `{x}` to an undeclared variable (at run time: empty text).",
        "SC303": "An `{% if %}`/`{% elif %}` condition reads a variable the app does not declare.",
        "SC304": "`{@TOOL: x}` names a tool the app does not declare.",
        "SC305": "`{@TOOL: x}` names a tool of the app that this agent may not call.",
        "SC306": "`{@AGENT: x}` names no agent of the app (display names must match exactly).",
        "SC308": "An agent's tool list names a tool the app does not declare.",
        "SC309": "An agent's sub-agent list names an agent the app does not have.",
        "SC310": "Static reference to a variable a tool or callback updates: the instructions change "
        "mid-session (no prompt caching).",
        "SC311": "A variable is never referenced (instructions, conditions, tools) nor updated.",
        "SC312": "A tool the agent may call is never mentioned with `{@TOOL: x}` in its instructions.",
        "SC313": "There is no agent with this name in the app.",
        "SC314": "The app has no root agent, or more than one.",
        "SC320": "A custom-object variable has no schema, or names a schema the app does not have.",
        "SC321": "Static path `{{a.b}}` that the variable's schema does not have.",
        "SC322": "Static path `{{a.b}}` the schema does not declare but allows (extra properties).",
        "SC323": "Static path into a variable or part that is not an object (or a list without index).",
        "SC324": "Static path with an index into a list (`{{list.0}}`): CX Agent Studio rejects it.",
        "SC330": "A variable name is not snake_case.",
        "SC331": "A variable name is not allowed (letters, digits, `_`; no leading digit; max 64).",
        "SC332": "Two variables, tools, agents or schemas have the same name.",
        "SC333": "A variable has no description (CX Agent Studio requires one on export).",
        "SC334": "A tool has no description (for a Python tool, no docstring either).",
        "SC340": "A tool or callback writes a key no variable declares (a note: the runtime keeps it).",
        "SC341": "A tool or callback writes a value that does not fit the variable's type or schema.",
        "SC342": "A tool or callback writes a variable whose name is computed: it cannot be checked.",
        "SC343": "A tool or callback reads or removes a variable the app does not declare.",
        "SC344": "A tool's mock sets a variable the app does not declare.",
        "SC350": "A Python tool's code has no function named like the tool.",
        "SC351": "Python code (tool or callback) has a syntax error.",
        "SC352": "An OpenAPI tool has no document, or not exactly one operation.",
        "SC353": "An MCP tool has no server URL.",
        "SC360": "`$context.…` in a tool names no built-in session value.",
        "SC361": "`$context.variables.<name>` in a tool names a variable the app does not declare.",
        "SC362": "`x-ces-session-context` not on a header/query parameter, or not a `$context` value.",
    },
    "simulate": {
        "SC401": "The scenario's agent does not exist in the app.",
        "SC402": "A session value is given for a variable the app does not declare: ignored.",
        "SC403": "A session value does not fit its variable's type or schema: ignored.",
        "SC404": "A step calls a tool the app does not have.",
        "SC405": (
            "A step calls a tool that is not attached to the agent (a warning when another "
            "agent has it and the call is scripted, as a golden lists it: CX's model would "
            "transfer there first; an error when a model makes it)."
        ),
        "SC406": "A Python tool or callback cannot run: code execution is not available (add a mock).",
        "SC407": "An OpenAPI/MCP tool without a mock: its response is unknown (null).",
        "SC408": "A tool's mock wrote an undeclared variable (ignored: an error); code's write of one is kept in the session state, as the runtime keeps it (a note).",
        "SC409": "A tool or callback wrote a value that does not fit the variable: write ignored.",
        "SC410": "Tool or callback code failed (exception, timeout, memory…): its writes are ignored.",
        "SC411": "A Python tool has neither code nor a mock.",
        "SC412": "A CALLBACK step names no callback kind, or the agent has no callback of that kind.",
        "SC413": "The last state update of a dynamically referenced variable left the context window.",
        "SC414": "The instructions alone exceed the token budget: no history fits.",
        "SC415": "Tool or callback code raised: the rest of the turn is not run (as in the runtime).",
        "SC416": "A before_agent callback answered: the rest of the turn is not run (as in ADK).",
        "SC417": "A transfer to an agent that does not exist or that the agent may not hand over to.",
        "SC418": "The session clock is not an ISO date-time: code reads the real clock.",
        "SC419": "The model loop of a turn stopped: every answer had a function call (a cap).",
        "SC420": "A before_model callback answered with text: the turn's later scripted answers are not used (ADK's turn ends with that answer).",
        "SC421": "A live model call failed (auth, quota, timeout, refused content, malformed arguments, a cap…): the turn ends.",
        "SC422": "A scripted call names a tool a before_model callback hid from the model for that call: it runs offline (ADK's tool table keeps it), but a live model would not be offered it.",
        "SC423": "CX's end_session ran: the conversation ends there (no further model call; the turn's later scripted answers and the later turns are not run).",
    },
    "http": {
        "SC430": "An OpenAPI tool has no usable operation: the request cannot be shown.",
        "SC431": "A path parameter of an OpenAPI call has no value: `{name}` stays in the URL.",
        "SC432": "A `$context` reference in a tool names nothing the session provides: left out.",
        "SC433": "An argument of an OpenAPI call is not a parameter and there is no body: not sent.",
        "SC434": "An MCP tool has no server URL.",
    },
    "script": {
        "SC451": "A scenario step line is not understood.",
        "SC452": "A tool step's arguments are not a JSON object.",
        "SC453": "A callback step names an unknown callback kind.",
        "SC454": "An expectation, mock or variables line of a scenario script is not understood.",
    },
    "bounds": {
        "SC470": "The scenario has more steps than `SIMULATION_MAX_STEPS`; only the first are simulated.",
        "SC471": "The sandbox lacks a protection `SANDBOX_REQUIRED_PROTECTIONS` requires: no Python code runs.",
        "SC472": "The simulation reached its cap of code calls or time; later tools and callbacks were not run.",
    },
    "live": {
        "SC480": "`STATECRAFT_MODELS` is not valid: the message names the field.",
        "SC481": "A run names no configured model (or none can be chosen): the message lists those there are.",
        "SC482": "A live run cannot be replayed or saved as a golden (deleted scenario, a replay).",
    },
    "formats": {
        "SC501": "An imported file is not JSON or YAML text (not UTF-8, or a YAML alias).",
        "SC502": "An imported file is too large or nested too deeply, or holds more objects or instruction text than one import takes.",
        "SC503": "An imported file holds what JSON cannot (NaN, binary data, a non-text key).",
        "SC504": "The document is not a Statecraft app, or of a format version this one cannot read.",
        "SC505": "The document does not match the native format's JSON Schema.",
        "SC506": "Two objects of one kind in the app have the same name.",
        "SC507": "A reference names a schema, tool or agent the app does not have (or makes a cycle).",
        "SC508": "The app has more than one root agent, or none (the first agent becomes the root).",
        "SC509": "A name, display name or code cannot be saved (invalid name, braces, Python syntax).",
        "SC510": "A scenario cannot be saved as written (setting, session value, step text).",
        "SC511": "A field that does not apply to the object is ignored.",
    },
    "cx_app": {
        "SC601": "The upload is not a readable ZIP (damaged, encrypted, unknown compression).",
        "SC602": "The ZIP has too many files or unpacks to too much data (a zip bomb is refused).",
        "SC603": "A path in the ZIP leaves its folder (../, absolute) or appears twice; refused.",
        "SC604": "The ZIP has no app.json (or several at the top).",
        "SC605": "A file of the ZIP is not UTF-8 text, or not the JSON object it should be.",
        "SC606": "A required field is missing or holds the wrong kind of value.",
        "SC607": "A CX feature Statecraft has no place for is not imported.",
        "SC608": "A reference names a file, tool or agent the ZIP does not have.",
        "SC609": "A CX name is not a valid Statecraft name.",
        "SC610": "Goldens start at the root agent, as CX starts every conversation (a note).",
        "SC611": "A toolset is a Terraform template: its ${var} placeholders are kept verbatim.",
        "SC612": "What the goldens' steps read as in the scenario script after an import (a note).",
        "SC620": "A Statecraft feature CX Agent Studio has no place for is not exported.",
        "SC621": "A mock is exported as the tool's fake-mode code block (fake mode as imported).",
        "SC622": "A CX variable needs a description; this one has none.",
        "SC623": "A folder name differs from the display name it comes from.",
        "SC624": "A CX schema becomes a Statecraft schema, named here (CX does not name schemas).",
        "SC625": "A CX tool needs a description (for a Python tool, its own or its docstring).",
        "SC626": "A sub-agent has more than one parent agent; in CX each has one.",
    },
    "adk_package": {
        "SC640": "A sub-agent already has a parent: ADK gives an agent one parent, so the ADK export leaves it out there.",
        "SC641": "An agent is not under the root agent: ADK runs only the root's tree, so the ADK export leaves it out.",
        "SC642": "An MCP header that is not a `$context` template is not exported (it may be a secret): the ADK package reads it from an environment variable.",
        "SC643": "A tool has no code, no document and no mock: in the ADK package it answers `{}`.",
        "SC644": "The app has no agent: the ADK package has nothing to run.",
    },
    "adk_evalsets": {
        "SC650": "A scenario talks to a sub-agent; ADK's eval starts every conversation at the root agent.",
        "SC651": "Input variables after a scenario's first turn have no place in an ADK evalset.",
        "SC652": "A `callback:` step has no place in an ADK evalset (ADK runs callbacks itself).",
        "SC653": "An `expect call` whose arguments the model chooses is left out of the evalset (ADK's trajectory compares arguments exactly).",
        "SC654": "A `mock:` step has no place in an ADK evalset; under ADK the tool runs.",
        "SC655": "Steps before a scenario's first `user:` step have no invocation in an ADK evalset.",
        "SC656": "An `expect no calls` cannot be checked by ADK's trajectory criterion (`IN_ORDER` allows other calls): the turn's expected trajectory is empty.",
        "SC660": "An uploaded ADK evalset cannot be read (not JSON, no `eval_cases` list, a malformed invocation); nothing is imported.",
        "SC661": "An eval case has no static conversation (a conversation scenario needs a user simulator): not imported.",
        "SC662": "An evalset's session state sets a variable the app does not declare: left out.",
    },
}

REGISTRY: dict[str, str] = {
    code: meaning for section in SECTIONS.values() for code, meaning in section.items()
}


def section(name: str) -> dict[str, str]:
    """The codes one module emits (its ``CODES``)."""
    return dict(SECTIONS[name])


def is_registered(code: str) -> bool:
    return code in REGISTRY


def readme_table() -> str:
    """The docs' table of codes, generated from the registry."""
    rows = [f"| `{code}` | {meaning} |" for code, meaning in sorted(REGISTRY.items())]
    return "\n".join(["| code | meaning |", "|---|---|", *rows])


if __name__ == "__main__":
    print(readme_table())
