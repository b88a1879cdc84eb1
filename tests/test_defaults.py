"""Settings defaults once (issue 29): every operator limit's default is written in
``agents/core/defaults.py`` and nowhere else. The Django settings read the environment
through ``from_env``; services through ``agents.services.common.setting``; the core's
dataclasses from ``DEFAULTS``. A second copy of a default fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agents.core.defaults import DEFAULTS, from_env
from agents.core.live import Caps
from agents.services.common import setting

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [
    path
    for folder in ("agents", "designer", "server")
    for path in sorted((ROOT / folder).rglob("*.py"))
    if "migrations" not in path.parts
]


def second_copies(source: str) -> list[str]:
    """Where `source` writes a default beside a setting's name: ``getattr(settings, NAME,
    default)`` or ``os.environ.get(NAME, default)`` / ``os.environ.get(NAME) or default``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            call = node.values[0]
            if _environ_get(call) in DEFAULTS:
                found.append(f"line {node.lineno}: {_environ_get(call)} or …")
        if not isinstance(node, ast.Call):
            continue
        name = _environ_get(node)
        if name in DEFAULTS and len(node.args) > 1:
            found.append(f"line {node.lineno}: os.environ.get({name}, …)")
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) == 3
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in DEFAULTS
            and not _reads_defaults(node.args[2])
        ):
            found.append(f"line {node.lineno}: getattr(settings, {node.args[1].value}, …)")
    return found


def _environ_get(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and "environ" in ast.unparse(node.func.value)
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return node.args[0].value
    return None


def _reads_defaults(node: ast.AST) -> bool:
    return isinstance(node, ast.Subscript) and ast.unparse(node.value) == "DEFAULTS"


def test_no_default_is_written_a_second_time():
    copies = {
        str(path.relative_to(ROOT)): found
        for path in PRODUCT
        if path.name != "defaults.py" and (found := second_copies(path.read_text()))
    }
    assert copies == {}


def test_the_check_finds_a_second_copy():
    source = (
        "import os\nfrom django.conf import settings\n"
        'a = getattr(settings, "LIVE_MAX_TOKENS", 200_000)\n'
        'b = int(os.environ.get("JOBS_MAX_SECONDS", "600"))\n'
        'c = int(os.environ.get("IMPORT_JOB_MIN_BYTES") or 1024)\n'
        'd = getattr(settings, "LIVE_MAX_TOKENS", DEFAULTS["LIVE_MAX_TOKENS"])\n'
    )
    assert [line.split(":")[0] for line in second_copies(source)] == ["line 3", "line 4", "line 5"]


def test_every_default_is_read_from_the_environment_by_its_name():
    text = (ROOT / "designer" / "settings.py").read_text()
    assert [n for n in DEFAULTS if f'from_env("{n}", os.environ)' not in text] == []


@pytest.mark.parametrize(
    ("raw", "name", "value"),
    [
        ("", "LIVE_MAX_MODEL_CALLS", 40),
        ("  ", "JOBS_MAX_SECONDS", 600.0),
        ("7", "LIVE_MAX_MODEL_CALLS", 7),
        ("2.5", "JOBS_YIELD_SECONDS", 2.5),
    ],
)
def test_from_env_reads_the_variable_in_the_defaults_type(raw, name, value):
    got = from_env(name, {name: raw})
    assert got == value and type(got) is type(value)


def test_services_and_the_core_read_the_same_default(settings):
    del settings.LIVE_MAX_TOKENS
    assert setting("LIVE_MAX_TOKENS") == DEFAULTS["LIVE_MAX_TOKENS"] == Caps().max_tokens
