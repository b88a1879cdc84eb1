"""The ADK export (issue 24): the package ADK loads, run by ADK's real runner, agrees with
Statecraft's simulation; its evalsets are ADK's; it is deterministic and holds no secret.

The differential test runs every scenario of the demo apps and of the CX corpus apps the
simulation runs (``tests/cx_corpus.py``: the goldens as scenarios, and one scenario per
agent calling every Python tool) twice: through ``simulate`` with the real sandbox, and
through the exported package on ``InMemoryRunner`` with a scripted ``BaseLlm`` playing the
scenario's model calls (``tests/adk/export_harness.py``). Compared: the state writes, the
final state, the answers, the tool responses, the instructions of each model call and the
``<state_update>`` lines each one received, the number of model calls of each turn, and
the turns an exception ended. The scripted model plays the scenario as the simulation
does (ADK's model loop): one scripted answer per call that reaches the model (a
``before_model`` callback answering in its place uses none; after its text alone the turn
is over), and "" past the script when the last answer had a function call. Allowed, as
the package's README lists them: ADK keeps one value per variable per event (consecutive
writes of one variable count once), ADK appends its transfer note to the instructions, and
the package sends the whole history (the simulation runs with a budget no scenario
reaches: `export_harness.WHOLE_HISTORY`).
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import importlib.util
import io
import json
import re
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from agents import selectors
from agents.core.adk.evalsets import scenarios_from_evalset
from agents.core.adk.package import package_name, to_adk_files
from agents.core.spec import (
    AgentSpec,
    AppSpec,
    CallbackKind,
    CallbackSpec,
    ExpectKind,
    ScenarioSpec,
    ToolKind,
    ToolSpec,
    VariableSpec,
    VariableType,
)
from agents.models import AgentApp
from agents.sandbox import Limits
from agents.services import exchange
from tests.adk.export_harness import (
    adk_run,
    between_call_and_response,
    calls_per_turn,
    differences,
    load_package,
    statecraft_run,
)
from tests.cx_corpus import (
    corpus_apps,
    cx_corpus,  # noqa: F401 - the fixture
    cx_corpus_root,
    golden_scenario,
    goldens,
    load_app,
    tools_scenario,
    with_every_tool,
)

# No xdist group: the tests spread over the workers (each worker imports ADK once).
pytestmark = [pytest.mark.adk]

adk = pytest.importorskip("google.adk", reason="google-adk is in the dev extra")

LIMITS = Limits(wall_time_s=10, cpu_time_s=10)
# Bella Notte's slot-filling engine starts a confirmation with an acknowledgement it picks
# at random (`random.choice`, slot_filling_engine line 1467) from its DAG configs'
# `confirm_transition_prefix` lists (bella_notte_dag line 447, takeout_dag line 127): set
# aside in both runs, in every text and value compared.
_RANDOM_PREFIX = re.compile(r"\b(?:Wonderful|Perfect|Great|Excellent|Lovely|Got it|Alright)! ")
# Its `book_reservation` makes the confirmation number from Python's `hash()` of a string
# (book_reservation line 28: `BN-{abs(hash(hash_input)) % 10000:04d}`), which every Python
# process salts at random (PYTHONHASHSEED): the sandbox's process and ADK's give two
# numbers for one booking, as two CX runs would. Set aside too.
_PROCESS_HASH = re.compile(r"\bBN-\d{4}\b")


def unrandom(value: Any) -> Any:
    if isinstance(value, str):
        return _PROCESS_HASH.sub("BN-####", _RANDOM_PREFIX.sub("", value))
    if isinstance(value, dict):
        return {k: unrandom(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [unrandom(v) for v in value]
    return value


def compare(app: AppSpec, scenario: ScenarioSpec, where: Path) -> tuple[str, list[str]]:
    """("agree" | "differ", the differences), the model calls of each turn among them."""
    theirs = adk_run(app, scenario, where)
    assert theirs is not None, f"{scenario.name}: a step has no ADK counterpart"
    ours = statecraft_run(app, scenario, LIMITS)
    found = differences(ours, theirs, unrandom)
    counts = calls_per_turn(ours, len(theirs.calls_per_turn))
    if counts != theirs.calls_per_turn:
        found.insert(0, f"model calls per turn: {counts} != {theirs.calls_per_turn}")
    return ("differ", found) if found else ("agree", [])


# --------------------------------------------------------------------------- demo apps


@pytest.mark.django_db
def test_the_demo_apps_run_on_adk_as_in_the_simulation(demo_apps, tmp_path):
    results = {}
    for app in demo_apps:
        spec, scenarios = selectors.app_specs(app)
        for n, scenario in enumerate(scenarios):
            results[f"{app.name}: {scenario.name}"] = compare(spec, scenario, tmp_path / str(n))
    assert results == {
        "Shopping assistant: Buy a product": ("agree", []),
        "Bank demo: Balance question": ("agree", []),
    }


# --------------------------------------------------------------------------- the CX corpus


def corpus_ids() -> list[str]:
    try:
        root = cx_corpus_root()
    except Exception:
        return ["corpus-unavailable"]
    return [folder.relative_to(root).as_posix() for folder in corpus_apps(root)]


# Each app's scenarios in SHARDS parts, so the workers share the largest (bella_notte's 28
# goldens, ~25 s) instead of one running it alone at the end of the suite.
SHARDS = 3


@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda n: f"part{n + 1}of{SHARDS}")
@pytest.mark.parametrize("app", corpus_ids())
def test_a_corpus_app_runs_on_adk_as_in_the_simulation(cx_corpus, app, shard, tmp_path):  # noqa: F811
    folder = cx_corpus / app
    spec = with_every_tool(load_app(folder))
    scenarios = [golden_scenario(folder, spec, g) for g in goldens(folder)]
    scenarios += [tools_scenario(folder, spec, agent) for agent in spec.agents]
    scenarios = scenarios[shard::SHARDS]
    outcome = {s.name: compare(spec, s, tmp_path / str(n)) for n, s in enumerate(scenarios)}
    differ = {name: found for name, (kind, found) in outcome.items() if kind == "differ"}
    assert differ == {}


# ------------------------------------------------------------ the runtime where CX code reads it

HEARD = (
    "def before_model_callback(callback_context, llm_request):\n"
    "    parts = llm_request.contents[-1].parts if llm_request.contents else []\n"
    "    callback_context.state['heard'] = parts[0].text if parts and parts[0].text else ''\n"
    "    return None\n"
)
TEXTS = (VariableSpec("heard", VariableType.TEXT), VariableSpec("flag", VariableType.TEXT))


def _one_turn(agent: str, *answers: str) -> ScenarioSpec:
    from agents.core.script import parse_script

    return ScenarioSpec(
        name="s", agent=agent, steps=parse_script("user: hello\n" + "".join(answers)).steps
    )


def test_a_model_callback_reads_the_users_message_last_not_a_state_update(tmp_path):
    """A before_agent write comes after the user's message; a model callback's
    ``llm_request.contents[-1]`` is still that message (the state updates are the model's)."""
    flag = (
        "def before_agent_callback(callback_context):\n    callback_context.state['flag'] = 'on'\n"
    )
    app = AppSpec(
        name="heard",
        variables=TEXTS,
        agents=(
            AgentSpec(
                "root",
                instructions="Say hi.",
                is_root=True,
                callbacks=(
                    CallbackSpec(CallbackKind.BEFORE_AGENT, flag),
                    CallbackSpec(CallbackKind.BEFORE_MODEL, HEARD),
                ),
            ),
        ),
    )
    theirs = adk_run(app, _one_turn("root", "agent: hi\n"), tmp_path)
    assert theirs.final_state["heard"] == "hello"


def test_another_agents_events_reach_a_model_callback_as_context(tmp_path):
    """After a transfer, the new agent's callback reads the root's transfer as
    ``<context>`` user text, as the simulation relays it."""
    app = AppSpec(
        name="relay",
        variables=TEXTS,
        agents=(
            AgentSpec("root", instructions="Route.", children=("desk",), is_root=True),
            AgentSpec(
                "desk",
                instructions="Help.",
                callbacks=(CallbackSpec(CallbackKind.BEFORE_MODEL, HEARD),),
            ),
        ),
    )
    scenario = _one_turn("root", "expect transfer: desk\n", "agent: hi\n")
    assert compare(app, scenario, tmp_path) == ("agree", [])


def test_a_before_tool_callback_filling_empty_arguments_in_place_reaches_the_tool(tmp_path):
    """CX's ``before_tool_callback(tool, input, callback_context)`` adds an argument to a
    call made with none: ADK hands the tool that same dict."""
    code = (
        'def greet(name: str = "") -> dict:\n    """Greet."""\n'
        '    context.state["heard"] = name\n    return {"name": name}\n'
    )
    fill = "def before_tool_callback(tool, input, callback_context):\n    input['name'] = 'Ada'\n"
    app = AppSpec(
        name="fill",
        variables=TEXTS,
        tools=(ToolSpec("greet", ToolKind.PYTHON, python_code=code),),
        agents=(
            AgentSpec(
                "root",
                instructions="Greet.",
                tools=("greet",),
                is_root=True,
                callbacks=(CallbackSpec(CallbackKind.BEFORE_TOOL, fill),),
            ),
        ),
    )
    theirs = adk_run(app, _one_turn("root", "tool: greet {}\n", "agent: ok\n"), tmp_path)
    assert theirs.final_state["heard"] == "Ada"


WRITES_IN_A_CALL = AppSpec(
    name="wire order",
    variables=(
        VariableSpec("balance", VariableType.NUMBER, default=0),
        VariableSpec("checked", VariableType.TEXT),
        VariableSpec("seen", VariableType.TEXT),
    ),
    tools=(
        ToolSpec(
            "Lookup",
            ToolKind.PYTHON,
            python_code='def Lookup(account: str) -> dict:\n    """Look the balance up."""\n'
            '    context.state["balance"] = 1250\n    return {"balance": 1250}\n',
        ),
    ),
    agents=(
        AgentSpec(
            "root",
            instructions="Your balance is {balance}. Use {@TOOL: Lookup}.",
            tools=("Lookup",),
            is_root=True,
            callbacks=(
                CallbackSpec(
                    CallbackKind.BEFORE_TOOL,
                    "def before_tool_callback(tool, args, tool_context):\n"
                    "    tool_context.state['checked'] = args['account']\n",
                ),
                CallbackSpec(
                    CallbackKind.AFTER_TOOL,
                    "def after_tool_callback(tool, args, tool_context, tool_response):\n"
                    "    tool_context.state['seen'] = 'yes'\n",
                ),
            ),
        ),
    ),
)


def test_nothing_comes_between_a_function_call_and_its_response_on_adk(tmp_path):
    """The exported package sent ADK's model the ``<state_update>`` of the tool's writes
    (and its callbacks') between the function call and the function response, which
    Gemini refuses with a 400 ("function response turn comes immediately after a function
    call turn"). They come right after the response, as in the simulation."""
    scenario = _one_turn(
        "root",
        'tool: Lookup {"account": "primary"}\n',
        "agent: Your balance is 1,250 EUR.\n",
        "user: thanks\n",
        "agent: You are welcome.\n",
    )
    theirs = adk_run(WRITES_IN_A_CALL, scenario, tmp_path)
    second = theirs.model_contents[1]
    assert between_call_and_response(second) == [], second
    assert second[1:] == [
        ("model", ("call:Lookup",)),
        ("user", ("response:Lookup",)),
        ("user", ("<state_update>checked: primary</state_update>",)),
        ("user", ("<state_update>balance: 1250</state_update>",)),
        ("user", ("<state_update>seen: yes</state_update>",)),
    ]
    for contents in theirs.model_contents:
        assert between_call_and_response(contents) == [], contents
    assert compare(WRITES_IN_A_CALL, scenario, tmp_path / "again") == ("agree", [])


@pytest.mark.parametrize("target", ["root", "nobody"])
def test_a_transfer_adk_refuses_is_the_listed_difference(target, tmp_path):
    """A transfer to the agent itself or to no such agent: ADK ends the turn with its error,
    the simulation reports SC417 and goes on (the package's README lists it)."""
    app = AppSpec(
        name="refused",
        agents=(
            AgentSpec("root", instructions="Route.", children=("desk",), is_root=True),
            AgentSpec("desk", instructions="Help."),
        ),
    )
    scenario = _one_turn("root", f"expect transfer: {target}\n", "agent: ok\n")
    theirs = adk_run(app, scenario, tmp_path)
    ours = statecraft_run(app, scenario, LIMITS)
    assert theirs.failed_turns == [0] and theirs.agent_texts == []
    assert [d.code for d in ours.diagnostics if d.code == "SC417"] == ["SC417"]
    assert [e.text for e in ours.events if e.kind == "agent"] == ["ok"]
    files, _ = to_adk_files(app)
    assert "**A transfer ADK refuses**" in files["refused/README.md"].decode()


def test_callbacks_run_by_kind_in_their_order_until_one_answers(tmp_path):
    """Two before_model callbacks given out of order run by their order (the trail is
    "ab"), the third answers in the model's place with CX's LlmResponse helper and the
    fourth does not run; CX's after_tool signature (tool, input, callback_context,
    tool_response) sees the response. As in the simulation."""

    def append(letter: str) -> str:
        return (
            "def before_model_callback(callback_context, llm_request):\n"
            f"    callback_context.state['trail'] = (callback_context.state.get('trail') or '') + {letter!r}\n"
        )  # fmt: skip

    answer = (
        "def before_model_callback(callback_context, llm_request):\n"
        "    return LlmResponse.from_parts([Part.from_text(text='from the callback')])\n"
    )
    seen = (
        "def after_tool_callback(tool, input, callback_context, tool_response):\n"
        "    callback_context.state['seen'] = f\"{tool.name}:{input['n']}:{tool_response['twice']}\"\n"
    )  # fmt: skip
    code = 'def double(n: int) -> dict:\n    """Double n."""\n    return {"twice": 2 * n}\n'
    app = AppSpec(
        name="order",
        variables=(VariableSpec("trail", VariableType.TEXT), VariableSpec("seen", VariableType.TEXT)),
        tools=(ToolSpec("double", ToolKind.PYTHON, python_code=code),),
        agents=(
            AgentSpec(
                "root",
                instructions="Go.",
                tools=("double",),
                is_root=True,
                callbacks=(
                    CallbackSpec(CallbackKind.BEFORE_MODEL, append("b"), order=2),
                    CallbackSpec(CallbackKind.BEFORE_MODEL, append("a"), order=1),
                    CallbackSpec(CallbackKind.AFTER_TOOL, seen, order=1),
                ),
            ),
        ),
    )  # fmt: skip
    scenario = _one_turn("root", 'tool: double {"n": 3}\n', "agent: done\n")
    assert compare(app, scenario, tmp_path / "a") == ("agree", [])
    theirs = adk_run(app, scenario, tmp_path / "b")
    assert theirs.final_state["trail"] == "abab" and theirs.final_state["seen"] == "double:3:6"
    stopping = AppSpec(
        name="order",
        variables=app.variables,
        agents=(
            AgentSpec(
                "root",
                instructions="Go.",
                is_root=True,
                callbacks=(
                    CallbackSpec(CallbackKind.BEFORE_MODEL, append("a"), order=1),
                    CallbackSpec(CallbackKind.BEFORE_MODEL, answer, order=2),
                    CallbackSpec(CallbackKind.BEFORE_MODEL, append("z"), order=3),
                ),
            ),
        ),
    )
    scenario = _one_turn("root", "agent: unused\n")
    assert compare(stopping, scenario, tmp_path / "c") == ("agree", [])
    theirs = adk_run(stopping, scenario, tmp_path / "d")
    assert (theirs.final_state["trail"], theirs.agent_texts) == ("a", ["from the callback"])
    files, _ = to_adk_files(stopping)
    assert (
        "before_model_callback=APP.callbacks('before_model', ['callbacks/root/before_model_01.py', "
        "'callbacks/root/before_model_02.py', 'callbacks/root/before_model_03.py'])"
    ) in files["order/agent.py"].decode()


def test_the_comparison_sees_a_difference(tmp_path):
    """A package whose tool writes another value than the simulation's is caught."""
    code = 'def bump(tool_context) -> dict:\n    """Bump."""\n    context.state["n"] = 1\n    return {}\n'
    app = AppSpec(
        name="bump",
        variables=(VariableSpec("n", VariableType.NUMBER, default=0),),
        tools=(ToolSpec("bump", ToolKind.PYTHON, python_code=code),),
        agents=(AgentSpec("root", instructions="n is {{n}}", tools=("bump",), is_root=True),),
    )
    from agents.core.script import parse_script

    steps = parse_script("user: go\ntool: bump {}\nagent: ok\n").steps
    scenario = ScenarioSpec(name="s", agent="root", steps=steps)
    assert compare(app, scenario, tmp_path / "a") == ("agree", [])
    changed = AppSpec(
        name="bump",
        variables=app.variables,
        tools=(ToolSpec("bump", ToolKind.PYTHON, python_code=code.replace("= 1", "= 2")),),
        agents=app.agents,
    )
    theirs = adk_run(changed, scenario, tmp_path / "b")
    ours = statecraft_run(app, scenario, LIMITS)
    assert differences(ours, theirs)[0] == "writes: [('n', 1)] != [('n', 2)]"


# --------------------------------------------------------------------------- the package


DYNAMIC = AppSpec(
    name="Été desk",
    variables=(
        VariableSpec("tier", VariableType.TEXT, default="silver"),
        VariableSpec("balance", VariableType.NUMBER, default=0),
    ),
    tools=(
        ToolSpec(
            "Lookup",
            ToolKind.PYTHON,
            python_code='def Lookup(account: str) -> dict:\n    """Look the balance up."""\n'
            '    context.state["balance"] = 12\n    return {"ok": True}\n',
        ),
        ToolSpec(
            "Remote",
            ToolKind.MCP,
            mcp_url="https://mcp.example.com/mcp",
            mcp_headers=(
                ("Authorization", "Bearer sk-live-123456"),
                ("X-Tier", "$context.variables.tier"),
            ),
        ),
    ),
    agents=(
        AgentSpec(
            "Front Desk",
            instructions='{% if channel == "telephony" %}Be short.{% endif %}'
            "Tier {{tier}}; balance {balance}. Use {@TOOL: Lookup}.",
            tools=("Lookup",),
            is_root=True,
        ),
    ),
)


# The same without its MCP tool (ADK's McpToolset needs the `mcp` package: the package's
# README names it; only the MCP tests need it, and they skip without it).
LOADABLE = AppSpec(
    name=DYNAMIC.name, variables=DYNAMIC.variables, tools=DYNAMIC.tools[:1], agents=DYNAMIC.agents
)


def _run(coroutine) -> Any:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_the_package_is_what_adk_loads(tmp_path):
    module, folder = load_package(LOADABLE, (), tmp_path)
    root = module.agent.root_agent
    assert (root.name, type(root).__name__) == ("Front_Desk", "LlmAgent")
    assert (folder / "__init__.py").is_file() and (folder / "README.md").is_file()
    tool = root.tools[0]
    declaration = tool._get_declaration()
    assert (declaration.name, declaration.description) == ("Lookup", "Look the balance up.")
    assert declaration.parameters_json_schema["required"] == ["account"]
    imports = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imports.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imports.add(node.module.split(".")[0])
    assert not imports & {"django", "agents", "rest_framework", "designer"}
    assert "google" in imports


def test_adks_own_loader_finds_root_agent_as_adk_run_and_adk_web_do(tmp_path):
    """``adk run DIR/<package>`` and ``adk web DIR`` load the agent with ADK's
    ``AgentLoader``: it lists the package and loads its ``root_agent``."""
    from google.adk.cli.utils.agent_loader import AgentLoader

    from tests.adk.export_harness import write_package

    folder = write_package(LOADABLE, (), tmp_path)
    loader = AgentLoader(str(tmp_path))
    assert loader.list_agents() == [folder.name]
    agent = loader.load_agent(folder.name)
    assert (type(agent).__name__, agent.name) == ("LlmAgent", "Front_Desk")


def test_the_package_readme_names_the_python_adk_needs(tmp_path):
    """The Python the package README names is google-adk's own minimum, and the shipped
    code compiles for it (its feature version)."""
    import importlib.metadata

    minimum = importlib.metadata.metadata("google-adk")["Requires-Python"].removeprefix(">=")
    files, _ = to_adk_files(LOADABLE)
    readme = files[f"{package_name(LOADABLE)}/README.md"].decode()
    assert f"Python {minimum} or newer" in readme
    major, minor = (int(n) for n in minimum.split(".")[:2])
    for path, data in files.items():
        if path.endswith(".py"):
            ast.parse(data, path, feature_version=(major, minor))


def test_the_instructions_are_compiled_from_the_state_before_each_call(tmp_path):
    """`{{tier}}` substituted, `{% if %}` chosen by the channel key, `{balance}` left as
    written (ADK does not substitute an instruction provider's text)."""
    from google.adk.agents.readonly_context import ReadonlyContext

    module, _ = load_package(LOADABLE, (), tmp_path)
    provide = module.agent.root_agent.instruction

    class Invocation:
        def __init__(self, state):
            self.session = type("S", (), {"state": state})()

    web = provide(ReadonlyContext(Invocation({"tier": "gold", "balance": 3})))
    phone = provide(
        ReadonlyContext(Invocation({"tier": "gold", "_statecraft_channel": "telephony"}))
    )
    assert web == "Tier gold; balance {balance}. Use {@TOOL: Lookup}."
    assert phone.startswith("Be short.Tier gold;")


def test_the_export_is_deterministic_and_holds_no_secret(tmp_path):
    first, diagnostics = to_adk_files(DYNAMIC)
    second, _ = to_adk_files(DYNAMIC)
    assert first == second
    assert exchange.zip_bytes(first) == exchange.zip_bytes(second)
    assert not any(b"sk-live-123456" in data for data in first.values())
    assert "REMOTE_AUTHORIZATION" in first[f"{package_name(DYNAMIC)}/agent.py"].decode()
    assert [d.code for d in diagnostics] == ["SC642"]


@pytest.mark.django_db
def test_no_secret_of_the_app_or_its_people_reaches_the_export(
    signed_in, user, other_user, shop, tmp_path
):
    """The app's live model (an endpoint with an API key, the app's default), its owner's
    API token and a share: the ZIP the export page serves and the folder the command writes
    hold none of them (the model is the CX setting or the placeholder, never the endpoint's
    key; no user or share is exported)."""
    from agents import services
    from agents.models import ModelEndpoint
    from agents.services import live_models

    key = "sk-endpoint-secret-0123456789"
    endpoint = live_models.endpoint_save(
        endpoint=ModelEndpoint(name="house", kind="gemini", model="gemini-2.5-pro"), api_key=key
    )
    live_models.app_model_set(app=shop, model="house")
    token = services.api_token_create(user=user).key
    services.app_share(app=shop, user=other_user, role="editor", actor=user)
    secrets = [key, endpoint.api_key_encrypted, token, other_user.password, user.password]
    download = signed_in.get(f"/apps/{shop.pk}/export/adk")
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        served = {name: archive.read(name) for name in archive.namelist()}
    call_command(
        "export_app", shop.pk, "--format", "adk", "-o", str(tmp_path), stderr=io.StringIO()
    )
    written = {p.as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert served and written
    for where, files in (("served", served), ("written", written)):
        for name, data in files.items():
            for secret in secrets:
                assert secret.encode() not in data, (where, name)


def test_schemas_ship_as_json_schema(tmp_path):
    from agents.core.spec import SchemaSpec

    schema = {"type": "object", "properties": {"first_name": {"type": "string"}}}
    app = AppSpec(
        name="s",
        schemas=(SchemaSpec("Customer", schema, "A customer"),),
        variables=(VariableSpec("c", VariableType.OBJECT, default={}, schema="Customer"),),
        agents=(AgentSpec("a", is_root=True),),
    )
    files, _ = to_adk_files(app)
    document = json.loads(files["s/schemas/Customer.schema.json"])
    assert document == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "description": "A customer",
    }
    assert json.loads(files["s/variables.json"])[0]["schema"] == "Customer"


# --------------------------------------------------------------------------- evalsets


def _text(content) -> str:
    return "".join(p.text or "" for p in (content.parts or ()))


def _calls_in_turn(contents: list, last: int) -> list[str]:
    """The tools called since the turn's user message (contents[last]), as the model reads
    them: its agent's function calls (a callback's among them) and another agent's as
    relayed text (``[agent] called tool `name` …``)."""
    names = []
    for content in contents[last + 1 :]:
        for part in content.parts or ():
            if part.function_call is not None:
                names.append(part.function_call.name)
            elif part.text and "] called tool `" in part.text:
                names.append(part.text.split("] called tool `", 1)[1].split("`", 1)[0])
    return names


def _scripted_evaluation_model(evalset):
    """A ``BaseLlm`` playing the eval case as a model following it would: in turn k (the
    k-th user message of the contents, whichever agent asks) it answers the turn's next
    expected tool use that the contents do not show made yet (by it, by a callback
    answering in its place, or by another agent before a transfer), then the turn's final
    response."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    (case,) = evalset.eval_cases
    conversation = case.conversation
    texts = {_text(invocation.user_content) for invocation in conversation}

    class Scripted(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):  # type: ignore[override]
            contents = llm_request.contents
            users = [i for i, c in enumerate(contents) if c.role == "user" and _text(c) in texts]
            invocation = conversation[len(users) - 1]
            uses = invocation.intermediate_data.tool_uses
            done = 0
            for name in _calls_in_turn(contents, users[-1]):
                if done < len(uses) and uses[done].name == name:
                    done += 1
            if done < len(uses):
                part = types.Part(
                    function_call=types.FunctionCall(name=uses[done].name, args=uses[done].args)
                )
            else:
                part = types.Part(
                    text=_text(invocation.final_response) if invocation.final_response else ""
                )
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    return Scripted(model="scripted")


def _play(module: Any, evalset: Any) -> None:
    """Every agent of the package's tree answers with the scripted model (a sub-agent's own
    CX model setting would otherwise reach a real model after a transfer)."""
    model = _scripted_evaluation_model(evalset)
    agents = [module.agent.root_agent]
    while agents:
        agent = agents.pop()
        agent.model = model
        agents.extend(agent.sub_agents)


def adk_evaluate(module: Any, folder: Path, name: str, model_evalset: Any = None) -> list:
    """Run ADK's evaluation of one evalset on the scripted model: ADK's
    ``EvaluationGenerator`` plays the eval case's user turns through the package's
    ``root_agent``, and each criterion of ``test_config.json`` is scored by ADK's evaluator
    for it. Returns [(metric, score, status)]. (``AgentEvaluator`` does the same but imports
    pandas, which google-adk's ``eval`` extra brings and this project does not install.)"""
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    evalset = EvalSet.model_validate_json((folder / "evals" / name).read_text())
    config = EvalConfig.model_validate_json((folder / "evals/test_config.json").read_text())
    _play(module, model_evalset or evalset)
    responses = _run(EvaluationGenerator.generate_responses(evalset, module.__name__, repeat_num=1))
    evaluators = {"tool_trajectory_avg_score": TrajectoryEvaluator}
    scores = []
    for metric in get_eval_metrics_from_config(config):
        if metric.metric_name not in evaluators:
            continue  # ADK's informational efficiency metrics
        evaluator = evaluators[metric.metric_name](eval_metric=metric)
        for case in responses:
            result = evaluator.evaluate_invocations(case.responses[0], case.eval_case.conversation)
            scores.append(
                (metric.metric_name, result.overall_score, result.overall_eval_status.name)
            )
    return scores


@pytest.mark.django_db
def test_the_evalsets_are_adk_evalsets_and_pass_adk_evaluator(demo_apps, tmp_path):
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet

    shop = next(a for a in demo_apps if a.name == "Shopping assistant")
    spec, scenarios = selectors.app_specs(shop)
    module, folder = load_package(spec, scenarios, tmp_path)
    evalset = EvalSet.model_validate_json((folder / "evals/buy_a_product.evalset.json").read_text())
    config = EvalConfig.model_validate_json((folder / "evals/test_config.json").read_text())
    assert list(config.criteria) == ["tool_trajectory_avg_score"]
    invocation = evalset.eval_cases[0].conversation[0]
    assert [(u.name, u.args) for u in invocation.intermediate_data.tool_uses] == [
        ("AddToCart", {"product_id": "shoe-blue-42", "quantity": 2})
    ]
    assert _text(invocation.final_response) == "Done — two pairs are in your cart."
    assert evalset.eval_cases[0].final_session_state == {"cart_total": 39}
    assert adk_evaluate(module, folder, "buy_a_product.evalset.json") == [
        ("tool_trajectory_avg_score", 1.0, "PASSED")
    ]


@pytest.mark.django_db
def test_adk_evaluator_fails_a_wrong_trajectory(demo_apps, tmp_path):
    """The criteria can fail: the scripted model calls the tool with other arguments."""
    from google.adk.evaluation.eval_set import EvalSet

    shop = next(a for a in demo_apps if a.name == "Shopping assistant")
    spec, scenarios = selectors.app_specs(shop)
    module, folder = load_package(spec, scenarios, tmp_path)
    text = (folder / "evals/buy_a_product.evalset.json").read_text()
    wrong = EvalSet.model_validate_json(text.replace('"quantity": 2', '"quantity": 3'))
    assert adk_evaluate(module, folder, "buy_a_product.evalset.json", wrong) == [
        ("tool_trajectory_avg_score", 0.0, "FAILED")
    ]


def _agent_evaluator():
    """ADK's ``AgentEvaluator`` (what ``adk eval`` and ADK's pytest integration run: its
    ``LocalEvalService`` plays the eval cases and scores each criterion). It needs
    google-adk's ``eval`` extra (pandas, Vertex AI's SDK), which the test extra leaves out
    for its weight: ``pip install -e '.[adk-eval]'``."""
    pytest.importorskip(
        "google.adk.evaluation.local_eval_service",
        reason="ADK's AgentEvaluator needs google-adk's eval extra: pip install -e '.[adk-eval]'",
    )
    from google.adk.evaluation.agent_evaluator import AgentEvaluator

    return AgentEvaluator


@pytest.mark.django_db
def test_adk_agent_evaluator_passes_the_exported_evalsets_on_the_scripted_model(
    demo_apps, tmp_path
):
    """Every evalset of the demo apps through ADK's own ``AgentEvaluator.evaluate_eval_set``
    (``LocalEvalService``) with the criteria of ``test_config.json``: it raises on a failed
    criterion; then the same evalset with a wrong argument fails it."""
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet

    evaluator = _agent_evaluator()
    ran = []
    for n, app in enumerate(demo_apps):
        spec, scenarios = selectors.app_specs(app)
        module, folder = load_package(spec, scenarios, tmp_path / str(n))
        config = EvalConfig.model_validate_json((folder / "evals/test_config.json").read_text())
        for path in sorted((folder / "evals").glob("*.evalset.json")):
            evalset = EvalSet.model_validate_json(path.read_text())
            _play(module, evalset)
            _run(
                evaluator.evaluate_eval_set(
                    module.__name__,
                    evalset,
                    eval_config=config,
                    num_runs=1,
                    print_detailed_results=False,
                )
            )
            ran.append(path.name)
    assert ran == ["buy_a_product.evalset.json", "balance_question.evalset.json"]
    shop = next(a for a in demo_apps if a.name == "Shopping assistant")
    module, folder = load_package(*selectors.app_specs(shop), tmp_path / "wrong")
    config = EvalConfig.model_validate_json((folder / "evals/test_config.json").read_text())
    original = (folder / "evals/buy_a_product.evalset.json").read_text()
    wrong = EvalSet.model_validate_json(original.replace('"quantity": 2', '"quantity": 3'))
    _play(module, wrong)
    with pytest.raises(AssertionError, match="tool_trajectory_avg_score"):
        _run(
            evaluator.evaluate_eval_set(
                module.__name__,
                EvalSet.model_validate_json(original),
                eval_config=config,
                num_runs=1,
                print_detailed_results=False,
            )
        )


def _without_ids(evalset: dict) -> dict:
    """An evalset without what names it (an imported scenario is named by the eval id)."""
    out = {k: v for k, v in evalset.items() if k not in ("eval_set_id", "name", "description")}
    cases = []
    for case in out["eval_cases"]:
        case = {k: v for k, v in case.items() if k != "eval_id"}
        case["conversation"] = [
            {k: v for k, v in i.items() if k != "invocation_id"} for i in case["conversation"]
        ]
        cases.append(case)
    out["eval_cases"] = cases
    return out


@pytest.mark.django_db
def test_adk_eval_runs_the_exported_package_as_its_readme_says(shop, tmp_path):
    """The package README's own command, ``adk eval <package> <evalset> --config_file_path
    …``, in a process of its own, with the model set as the README says
    (``STATECRAFT_ADK_MODEL``): a LiteLLM ``openai/…`` model served by a real HTTP server
    on loopback that answers the golden's call and reply. ADK reports the eval passed; the
    model received the compiled instructions and the expected tool's declaration."""
    import os
    import subprocess
    import sys

    _agent_evaluator()
    if importlib.util.find_spec("litellm") is None:  # not imported here: it fetches a price list
        pytest.skip("ADK's LiteLlm model needs litellm (google-adk's eval extra)")
    from tests.adk.export_harness import write_package
    from tests.llm_server import ModelServer, openai_call, openai_text

    spec, scenarios = selectors.app_specs(shop)
    folder = write_package(spec, scenarios, tmp_path)
    readme = (folder / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("adk eval "))
    config = next(line for line in readme.splitlines() if "--config_file_path" in line)
    args = command.removesuffix("\\").split()[2:] + config.split()
    server = ModelServer(repeat_last=True).script(
        openai_call("AddToCart", {"product_id": "shoe-blue-42", "quantity": 2}),
        openai_text("Done — two pairs are in your cart."),
    )
    try:
        env = {
            **os.environ,
            "STATECRAFT_ADK_MODEL": "openai/scripted",
            "OPENAI_API_BASE": f"{server.url}/v1",
            "OPENAI_API_KEY": "test-key",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        adk = Path(sys.executable).with_name("adk")
        done = subprocess.run(
            [str(adk), "eval", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        server.close()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "Tests passed: 1" in output, output[-3000:]
    first = server.seen[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["AddToCart"]
    system = first["messages"][0]
    assert system["role"] == "system" and "{{" not in str(system["content"])


@pytest.mark.parametrize("app", corpus_ids())
def test_the_corpus_goldens_are_adk_evalsets_that_pass_adk_evaluator(cx_corpus, app, tmp_path):  # noqa: F811
    """Each corpus app as Statecraft imports it (its CX goldens as scenarios with
    expectations: Bella Notte's 28): every exported evalset parses with ADK's models,
    imports back as a scenario that exports as the same evalset, and passes ADK's
    evaluation on the scripted model — EvaluationGenerator +
    TrajectoryEvaluator, and AgentEvaluator when google-adk's eval extra is installed."""
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet

    from agents.core.adk.evalsets import has_expectations
    from agents.core.cx.import_ import read_cx_files

    folder = cx_corpus / app
    files = {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    spec, scenarios, _ = read_cx_files(files)
    module, package = load_package(spec, scenarios, tmp_path)
    paths = sorted((package / "evals").glob("*.evalset.json"))
    assert len(paths) == sum(1 for s in scenarios if has_expectations(s))
    if not paths:
        return
    EvalConfig.model_validate_json((package / "evals/test_config.json").read_text())
    failed = {}
    for path in paths:
        EvalSet.model_validate_json(path.read_text())
        # Imported back, the eval case is a scenario that exports as the same evalset.
        (back,), notes = scenarios_from_evalset(path.read_bytes(), spec)
        assert [n for n in notes if n.severity.value == "error"] == []
        again, _ = to_adk_files(spec, (back,))
        (data,) = [v for k, v in again.items() if k.endswith(".evalset.json")]
        assert _without_ids(json.loads(data)) == _without_ids(json.loads(path.read_text()))
        scores = adk_evaluate(module, package, path.name)
        if any(status != "PASSED" for _, _, status in scores):
            failed[path.name] = scores
    assert failed == {}
    try:
        evaluator = _agent_evaluator()
    except pytest.skip.Exception:
        return
    config = EvalConfig.model_validate_json((package / "evals/test_config.json").read_text())
    for path in paths:
        evalset = EvalSet.model_validate_json(path.read_text())
        _play(module, evalset)
        _run(
            evaluator.evaluate_eval_set(
                module.__name__, evalset, eval_config=config, print_detailed_results=False
            )
        )


@pytest.mark.django_db
def test_an_evalset_imports_back_as_scenarios(demo_apps, user, tmp_path):
    bank = next(a for a in demo_apps if a.name == "Bank demo")
    spec, scenarios = selectors.app_specs(bank)
    files, _ = to_adk_files(spec, scenarios)
    data = files["bank_demo/evals/balance_question.evalset.json"]
    back, notes = scenarios_from_evalset(data, spec)
    assert notes == ()
    expectations = [
        (s.kind.value, s.expectation.kind.value if s.expectation else "", s.text)
        for s in back[0].steps
    ]
    assert expectations == [
        ("user", "", "Hi! What is the balance of my current account?"),
        ("expect", "call", ""),
        ("expect", "response", ""),
        ("expect", "agent", ""),
        ("user", "", "Thanks. Is that enough to pay a 900 EUR invoice?"),
        ("expect", "agent", ""),
        ("expect", "state", ""),
    ]
    call = back[0].steps[1].expectation
    assert (call.kind, call.tool, call.value) == (
        ExpectKind.CALL,
        "LookupBalance",
        {"account_id": "primary"},
    )
    created, _ = exchange.app_import_evalset(app=bank, actor=user, data=data)
    assert [s.name for s in created] == ["balance_question"]
    # The imported scenario is a golden the simulation passes, as the original does.
    from agents.services.evaluation import scenario_run

    root = bank.agents.get(is_root=True)
    run = scenario_run(app=bank, agent=root, scenario=created[0])
    assert (run.evaluation.status, run.evaluation.failed) == ("passed", 0)


def test_what_an_evalset_cannot_check_is_reported():
    """An `expect no calls` leaves the turn's trajectory empty, which ADK's IN_ORDER cannot
    hold against a call: the export says so (SC656) instead of dropping it silently."""
    from agents.core.script import parse_script

    app = AppSpec(name="x", agents=(AgentSpec("a", is_root=True),))
    steps = parse_script("user: hi\nexpect no calls\nagent: hello\n").steps
    files, notes = to_adk_files(app, (ScenarioSpec(name="quiet", agent="a", steps=steps),))
    assert [(n.code, n.message) for n in notes] == [
        (
            "SC656",
            "scenario quiet: turn 0 expects no calls; ADK's trajectory criterion (IN_ORDER) "
            "allows other calls, so the evalset cannot check it.",
        )
    ]
    evalset = json.loads(files["x/evals/quiet.evalset.json"])
    assert evalset["eval_cases"][0]["conversation"][0]["intermediate_data"]["tool_uses"] == []


def test_a_file_that_is_not_an_evalset_is_refused_with_its_field():
    app = AppSpec(name="x", agents=(AgentSpec("a", is_root=True),))
    scenarios, problems = scenarios_from_evalset(b'{"eval_set_id": "x"}', app, "x.json")
    assert scenarios == []
    assert [(p.code, p.message) for p in problems] == [
        ("SC660", "x.json: eval_cases: an ADK evalset holds a list eval_cases")
    ]


def test_every_eval_case_out_of_shape_is_listed_not_only_the_first():
    # A case that is not an object stopped the reading: the cases after it were not checked.
    app = AppSpec(
        name="x",
        agents=(AgentSpec("a", is_root=True),),
        variables=(VariableSpec("n", VariableType.NUMBER),),
    )
    hi = {"user_content": {"parts": [{"text": "hi"}]}}
    doc = {
        "eval_cases": [
            3,
            {
                "eval_id": "c1",
                "conversation": [hi],
                "session_input": {"state": {"_statecraft_channel": "fax", "n": "x"}},
            },
            {"eval_id": "c2", "conversation": [5]},
            {"eval_id": "fine", "conversation": [hi]},
        ]
    }
    scenarios, problems = scenarios_from_evalset(json.dumps(doc), app, "e.json")
    assert scenarios == []  # all or nothing
    assert [(p.code, p.field) for p in problems] == [
        ("SC660", "eval_cases[0]"),
        ("SC009", "eval_cases[1].session_input.state._statecraft_channel"),
        ("SC201", "eval_cases[1].session_input.state.n"),
        ("SC660", "eval_cases[2].conversation[0]"),
    ]
    assert problems[1].message == (
        "e.json: eval_cases[1].session_input.state._statecraft_channel: "
        "Channel must be one of web, api, telephony."
    )


# --------------------------------------------------------------------------- commands and page


@pytest.mark.django_db
def test_export_app_format_adk_writes_the_package(shop, tmp_path):
    call_command(
        "export_app", shop.pk, "--format", "adk", "-o", str(tmp_path), stderr=io.StringIO()
    )
    package = tmp_path / "shopping_assistant"
    assert "root_agent = agent_Shopping_Assistant" in (package / "agent.py").read_text()
    assert (package / "evals" / "buy_a_product.evalset.json").is_file()
    target = tmp_path / "shop.zip"
    call_command("export_app", shop.pk, "--format", "adk", "-o", str(target), stderr=io.StringIO())
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
    assert sorted(names) == sorted(
        p.relative_to(tmp_path).as_posix() for p in package.rglob("*") if p.is_file()
    )


@pytest.mark.django_db
def test_import_app_evalset_into_adds_scenarios(bank, user, tmp_path):
    spec, scenarios = selectors.app_specs(bank)
    files, _ = to_adk_files(spec, scenarios)
    path = tmp_path / "balance_question.evalset.json"
    path.write_bytes(files["bank_demo/evals/balance_question.evalset.json"])
    out = io.StringIO()
    call_command(
        "import_app",
        str(path),
        "--owner",
        user.username,
        "--evalset-into",
        str(bank.pk),
        stdout=out,
        stderr=io.StringIO(),
    )
    added = [int(line) for line in out.getvalue().split()]
    assert len(added) == 1
    assert (
        AgentApp.objects.get(pk=bank.pk)
        .agents.get(is_root=True)
        .scenarios.filter(pk=added[0], name="balance_question")
        .exists()
    )


@pytest.mark.django_db
def test_the_export_page_offers_the_adk_project(signed_in, shop, tmp_path):
    page = signed_in.get(f"/apps/{shop.pk}/export")
    assert b"Download ADK project (ZIP)" in page.content
    download = signed_in.get(f"/apps/{shop.pk}/export/adk")
    assert download["Content-Disposition"] == 'attachment; filename="shopping_assistant-adk.zip"'
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        assert "shopping_assistant/agent.py" in archive.namelist()
    # The same app gives the same bytes, from the page and from the command.
    assert signed_in.get(f"/apps/{shop.pk}/export/adk").content == download.content
    target = tmp_path / "shop.zip"
    call_command("export_app", shop.pk, "--format", "adk", "-o", str(target), stderr=io.StringIO())
    assert target.read_bytes() == download.content


class _Api:
    """A real HTTP API on loopback answering every GET with `body`, keeping each request's
    path (with its query) and headers."""

    def __init__(self, body: dict) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _weather_app(url: str) -> AppSpec:
    from agents.core.spec import ToolMock

    session = "x-ces-session-context"
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Weather", "version": "1"},
        "servers": [{"url": url}],
        "paths": {
            "/weather": {
                "get": {
                    "operationId": "getWeather",
                    "summary": "The weather in a city.",
                    "parameters": [
                        {"name": "city", "in": "query", "required": True, "schema": {"type": "string"}},
                        {"name": "units", "in": "query", "schema": {"type": "string"}, session: "$context.variables.units"},
                        {"$ref": "#/components/parameters/Tier"},
                        {"name": "X-None", "in": "header", "schema": {"type": "string"}, session: "$context.variables.nothing"},
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {
            "parameters": {
                "Tier": {"name": "X-Tier", "in": "header", "schema": {"type": "string"}, session: "$context.variables.tier"}
            }
        },
    }  # fmt: skip
    return AppSpec(
        name="weather desk",
        variables=(
            VariableSpec("units", VariableType.TEXT, default="metric"),
            VariableSpec("tier", VariableType.TEXT, default="gold"),
            VariableSpec("nothing", VariableType.TEXT),
        ),
        tools=(
            ToolSpec(
                "Weather",
                ToolKind.OPENAPI,
                openapi=document,
                mock=ToolMock(response={"temp": 21}),
            ),
        ),
        agents=(AgentSpec("root", instructions="Use {@TOOL: Weather}.", tools=("Weather",), is_root=True),),
    )  # fmt: skip


def test_an_openapi_tool_is_called_and_sends_as_in_cx(tmp_path, monkeypatch):
    """The model calls the OpenAPI tool by the app's name for it (`Weather`, not ADK's
    `get_weather`), is shown only the parameters it fills, and the request the package
    sends (a real one, to a loopback API) is the one the simulation shows: the
    ``x-ces-session-context`` query and header parameters filled from the session, the one
    without a value left out. The answers, writes and responses agree with the simulation
    (whose mock answers what the API does)."""
    from urllib.parse import parse_qsl, urlsplit

    api = _Api({"temp": 21})
    try:
        monkeypatch.setenv("STATECRAFT_ADK_ALLOW_PRIVATE_NETWORK", "1")
        app = _weather_app(api.url)
        module, _ = load_package(app, (), tmp_path / "load")
        (tool,) = module.agent.root_agent.tools
        declaration = tool._get_declaration()
        assert declaration.name == "Weather"
        schema = declaration.parameters_json_schema or declaration.parameters.model_dump(
            exclude_none=True
        )
        assert list(schema["properties"]) == ["city"]
        scenario = _one_turn("root", 'tool: Weather {"city": "Paris"}\n', "agent: sunny\n")
        assert compare(app, scenario, tmp_path / "run") == ("agree", [])
        ours = statecraft_run(app, scenario, LIMITS)
    finally:
        api.close()
    ((shown,),) = [t.http for t in ours.turns if t.http]
    (path, headers), *_ = api.seen
    shown_url = urlsplit(shown.url)
    assert path.split("?")[0] == shown_url.path
    assert sorted(parse_qsl(urlsplit(path).query)) == sorted(parse_qsl(shown_url.query))
    assert sorted(parse_qsl(shown_url.query)) == [("city", "Paris"), ("units", "metric")]
    assert headers["x-tier"] == shown.header("X-Tier") == "gold"
    assert "x-none" not in headers and shown.header("X-None") is None


def test_an_openapi_tool_without_an_operation_runs_its_mock(tmp_path):
    """A document without an operation (SC352 in the designer) has nothing for ADK to
    call: the tool answers its mock, as in the simulation, and the package still loads."""
    from agents.core.spec import ToolMock

    empty = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {}}
    tool = ToolSpec("Lookup", ToolKind.OPENAPI, openapi=empty, mock=ToolMock(response={"ok": 1}))
    app = AppSpec(
        name="empty api",
        tools=(tool,),
        agents=(AgentSpec("root", tools=("Lookup",), is_root=True),),
    )
    scenario = _one_turn("root", "tool: Lookup {}\n", "agent: fine\n")
    assert compare(app, scenario, tmp_path) == ("agree", [])
    assert adk_run(app, scenario, tmp_path / "b").tool_responses == [{"ok": 1}]


def test_an_mcp_tool_is_the_servers_tool_under_the_apps_name(tmp_path):
    """An imported CX toolset's MCP tool is `<toolset>_<toolId>` in the app and `toolId` on
    the server: the package asks the server for that one tool and names it as the app does
    (`Named`, over ADK's own McpToolset)."""
    tool = ToolSpec(
        "crm_get_guest",
        ToolKind.MCP,
        mcp_url="https://mcp.example.com/mcp",
        cx={"toolset": "crm", "operation": "get_guest"},
    )
    app = AppSpec(
        name="mcp desk",
        tools=(tool,),
        agents=(AgentSpec("root", tools=(tool.name,), is_root=True),),
    )
    files, _ = to_adk_files(app)
    agent_py = files["mcp_desk/agent.py"].decode()
    assert "tool_filter=['get_guest']," in agent_py
    assert "), {'get_guest': 'crm_get_guest'})" in agent_py


class _McpServer:
    """A real MCP server (the ``mcp`` SDK's, streamable HTTP) on loopback with one tool,
    ``get_guest``, keeping each request's headers."""

    def __init__(self) -> None:
        import socket
        import threading

        import uvicorn
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("crm")
        self.calls: list[dict] = []
        self.headers: list[dict[str, str]] = []

        @server.tool()
        def get_guest(guest_id: str) -> dict:
            """The guest's record."""
            self.calls.append({"guest_id": guest_id})
            return {"guest_id": guest_id, "name": "Ada"}

        inner = server.streamable_http_app(stateless_http=True, json_response=True)

        async def app(scope, receive, send):
            if scope["type"] == "http":
                self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
            await inner(scope, receive, send)

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()  # connections wait in the backlog until uvicorn accepts them
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]})
        self.thread.start()

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def test_an_mcp_toolset_tool_calls_the_server_as_in_cx(tmp_path, monkeypatch):
    """An imported CX toolset's MCP tool (`crm_get_guest` in the app, `get_guest` on the
    server) through ADK's own McpToolset against a real MCP server: the model is shown it
    under the app's name, the server runs its tool with the model's arguments, and the
    request carries the headers the simulation's request shows (a `$context` template
    filled from the session; a literal value, never exported, from its environment
    variable)."""
    pytest.importorskip("mcp", reason="ADK's McpToolset needs the mcp package: pip install mcp")
    from agents.core.http import mcp_request

    server = _McpServer()
    try:
        tool = ToolSpec(
            "crm_get_guest",
            ToolKind.MCP,
            mcp_url=server.url,
            mcp_headers=(("X-Tier", "$context.variables.tier"), ("Authorization", "Bearer lit")),
            cx={"toolset": "crm", "operation": "get_guest"},
        )
        app = AppSpec(
            name="mcp desk",
            variables=(VariableSpec("tier", VariableType.TEXT, default="gold"),),
            tools=(tool,),
            agents=(AgentSpec("root", tools=(tool.name,), is_root=True),),
        )
        monkeypatch.setenv("CRM_GET_GUEST_AUTHORIZATION", "Bearer from-env")
        module, _ = load_package(app, (), tmp_path / "load")
        (toolset,) = module.agent.root_agent.tools
        assert [t.name for t in _run(toolset.get_tools())] == ["crm_get_guest"]
        scenario = _one_turn("root", 'tool: crm_get_guest {"guest_id": "g1"}\n', "agent: ok\n")
        theirs = adk_run(app, scenario, tmp_path / "run")
    finally:
        server.close()
    assert theirs.failed_turns == [] and theirs.agent_texts == ["ok"]
    assert server.calls == [{"guest_id": "g1"}]
    assert theirs.final_state["tier"] == "gold"
    ((response,),) = [r["content"] for r in theirs.tool_responses]
    assert json.loads(response["text"]) == {"guest_id": "g1", "name": "Ada"}
    shown, _ = mcp_request(tool, {"guest_id": "g1"}, {"variables": {"tier": "gold"}})
    assert json.loads(shown.body)["params"] == {
        "name": "get_guest",
        "arguments": {"guest_id": "g1"},
    }
    posts = [h for h in server.headers if h.get("x-tier")]
    assert posts and all(h["x-tier"] == shown.header("X-Tier") == "gold" for h in posts)
    assert all(h["authorization"] == "Bearer from-env" for h in posts)


def test_named_renames_and_filters_an_adk_toolset(tmp_path):
    """`Named` over a real ADK toolset (an OpenAPIToolset of two operations): only the
    mapped tool, renamed; the toolset's own tool keeps its name."""
    from google.adk.tools.openapi_tool.openapi_spec_parser.openapi_toolset import OpenAPIToolset

    module, _ = load_package(LOADABLE, (), tmp_path)
    runtime = importlib.import_module(f"{module.__name__}.statecraft_runtime.runtime")
    ok = {"responses": {"200": {"description": "ok"}}}
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/a": {"get": {"operationId": "getA", **ok}},
            "/b": {"get": {"operationId": "getB", **ok}},
        },
    }
    inner = OpenAPIToolset(spec_dict=spec)
    named = runtime.Named(inner, {"get_b": "crm_getB"})
    assert [t.name for t in _run(named.get_tools())] == ["crm_getB"]
    assert sorted(t.name for t in _run(inner.get_tools())) == ["get_a", "get_b"]


def _evalset_upload(data: bytes, name: str = "balance_question.evalset.json"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/json")


@pytest.mark.django_db
def test_the_export_page_adds_scenarios_from_an_evalset(signed_in, bank):
    """The export page's form, through the URL conf: the eval case becomes a scenario of
    the root agent, the designer says how many; the page refuses no file and a file that is
    not an evalset, naming the field."""
    spec, scenarios = selectors.app_specs(bank)
    files, _ = to_adk_files(spec, scenarios)
    data = files["bank_demo/evals/balance_question.evalset.json"]
    url = f"/apps/{bank.pk}/import-evalset"
    done = signed_in.post(url, {"evalset": _evalset_upload(data)}, follow=True)
    assert done.redirect_chain == [(f"/apps/{bank.pk}/", 302)]
    assert "Added 1 scenario from balance_question.evalset.json." in done.content.decode()
    root = AgentApp.objects.get(pk=bank.pk).agents.get(is_root=True)
    assert root.scenarios.filter(name="balance_question").exists()

    empty = signed_in.post(url, {})
    assert empty.status_code == 400
    assert "Choose an ADK evalset file (.evalset.json)." in empty.content.decode()
    wrong = signed_in.post(url, {"evalset": _evalset_upload(b'{"eval_set_id": "x"}', "x.json")})
    assert wrong.status_code == 400
    page = wrong.content.decode()
    assert "<code>eval_cases</code>" in page and "SC660" in page


@pytest.mark.django_db
def test_the_evalset_import_speaks_the_designers_language(signed_in, bank):
    """Its warnings (here: a session value the app does not declare) reach the designer
    in their language, not in the core's English."""
    spec, scenarios = selectors.app_specs(bank)
    files, _ = to_adk_files(spec, scenarios)
    evalset = json.loads(files["bank_demo/evals/balance_question.evalset.json"])
    evalset["eval_cases"][0]["session_input"]["state"]["nobody"] = 1
    upload = _evalset_upload(json.dumps(evalset).encode())
    done = signed_in.post(
        f"/apps/{bank.pk}/import-evalset",
        {"evalset": upload},
        follow=True,
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    page = done.content.decode()
    assert "l&#x27;application ne déclare pas de variable nobody" in page, page[:3000]


def test_mcp_headers_are_filled_from_the_session_and_the_environment(tmp_path, monkeypatch):
    """A `$context` template is filled from the state at call time; a literal header comes
    from its environment variable (never from the export)."""
    app = AppSpec(name=LOADABLE.name, variables=LOADABLE.variables, agents=LOADABLE.agents)
    module, _ = load_package(app, (), tmp_path)
    runtime = importlib.import_module(f"{module.__name__}.statecraft_runtime.runtime")
    provide = runtime.header_provider(
        [
            ("Authorization", "env", "REMOTE_AUTHORIZATION"),
            ("X-Tier", "template", "tier={$context.variables.tier}"),
            ("X-Missing", "template", "$context.variables.nobody"),
        ]
    )
    monkeypatch.setenv("REMOTE_AUTHORIZATION", "Bearer from-env")
    context = type("Ctx", (), {"state": {"tier": "gold"}, "session": None})()
    assert provide(context) == {"Authorization": "Bearer from-env", "X-Tier": "tier=gold"}


def test_adks_own_contents_never_put_an_event_between_a_call_and_its_response():
    """The evidence for where the state updates of a function call go (README, "Where a
    state update sits"): ADK's ``_get_contents`` moves an event with text found between a
    function call and its response to right after the response when it is history, and
    leaves it out when that response is the newest event (the request that follows the
    call: ``rearrange_events_for_latest_function_response``); never between them."""
    from google.adk.events import Event, EventActions
    from google.adk.flows.llm_flows.contents import _get_contents
    from google.genai import types

    def content(role: str, part: Any) -> types.Content:
        return types.Content(role=role, parts=[part])

    update = "<state_update>balance: 1250</state_update>"
    call = types.FunctionCall(id="c1", name="Lookup", args={})
    response = types.FunctionResponse(id="c1", name="Lookup", response={"ok": True})
    events = [
        Event(author="user", invocation_id="i", content=content("user", types.Part(text="hi"))),
        Event(
            author="root",
            invocation_id="i",
            content=content("model", types.Part(function_call=call)),
        ),
        Event(
            author="user",
            invocation_id="i",
            content=content("user", types.Part(text=update)),
            actions=EventActions(state_delta={"balance": 1250}),
        ),
        Event(
            author="root",
            invocation_id="i",
            content=content("user", types.Part(function_response=response)),
            actions=EventActions(state_delta={"balance": 1250}),
        ),
    ]
    later = [
        Event(author="root", invocation_id="i", content=content("model", types.Part(text="ok"))),
        Event(author="user", invocation_id="j", content=content("user", types.Part(text="thx"))),
    ]

    def kinds(contents: list[types.Content]) -> list[str]:
        return [
            "call" if p.function_call else "response" if p.function_response else p.text
            for c in contents
            for p in c.parts
        ]

    assert kinds(_get_contents(None, events, "root")) == ["hi", "call", "response"]
    assert kinds(_get_contents(None, events + later, "root")) == [
        "hi",
        "call",
        "response",
        update,
        "ok",
        "thx",
    ]


def test_a_call_whose_tool_raised_is_left_out_of_the_next_request_on_adk(tmp_path):
    """The tool raises and ends the invocation with its function call unanswered: the next
    turn's history leaves that call out (ADK's ``drop_orphaned_function_calls``; the
    package rebuilt the history with it, which Gemini and OpenAI refuse), as the
    simulation does."""
    raising = (
        'def Lookup(account: str) -> dict:\n    """Look the balance up."""\n'
        '    context.state["balance"] = 1\n    raise ValueError("down")\n'
    )
    app = AppSpec(
        name="raising",
        variables=WRITES_IN_A_CALL.variables,
        tools=(ToolSpec("Lookup", ToolKind.PYTHON, python_code=raising),),
        agents=(
            AgentSpec("root", instructions="Use {@TOOL: Lookup}.", tools=("Lookup",), is_root=True),
        ),
    )
    scenario = _one_turn(
        "root", 'tool: Lookup {"account": "primary"}\n', "user: again?\n", "agent: Sorry.\n"
    )
    theirs = adk_run(app, scenario, tmp_path)
    assert theirs.failed_turns == [0]
    assert theirs.model_contents[-1] == [("user", ("hello",)), ("user", ("again?",))]
    assert compare(app, scenario, tmp_path / "again") == ("agree", [])
