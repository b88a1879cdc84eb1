"""The shape of the house (docs/architecture.md): which package may import which.

Dependencies point inward: adapters → services/selectors → models → core. The
check reads every module's imports with `ast` (also those inside functions), so a
new module is covered without being listed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# layer → the first-party packages its modules must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "agents/core": (
        "django",
        "rest_framework",
        "agents.models",
        "agents.services",
        "agents.selectors",
        "agents.sandbox",
        "agents.api",
        "designer",
        "server",
    ),
    "agents/sandbox": (
        "django",
        "rest_framework",
        "agents.models",
        "agents.services",
        "agents.selectors",
        "agents.api",
        "designer",
        "server",
    ),
    "agents/models": (
        "agents.services",
        "agents.selectors",
        "agents.api",
        "designer",
        "rest_framework",
        "server",
    ),
    "agents/selectors.py": (
        "agents.services",
        "agents.api",
        "designer",
        "rest_framework",
        "server",
    ),
    "agents/services": ("agents.api", "designer", "agents.admin", "server"),
    # Export and import: a use case like the others, which knows no web framework.
    "agents/services/exchange.py": ("agents.api", "designer", "rest_framework"),
    "agents/api": ("designer",),
    # The processes' concerns (rate limits, sign-in, the workers): below both web adapters.
    "server": ("agents.api", "designer"),
}


def _modules(where: str) -> list[Path]:
    path = ROOT / where
    return [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


CASES = [(layer, path) for layer in FORBIDDEN for path in _modules(layer)]


@pytest.mark.parametrize(("layer", "path"), CASES, ids=[str(p.relative_to(ROOT)) for _, p in CASES])
def test_module_imports_only_inward(layer, path):
    bad = sorted(
        name
        for name in _imports(path)
        for banned in FORBIDDEN[layer]
        if name == banned or name.startswith(banned + ".")
    )
    assert not bad, f"{path.relative_to(ROOT)} ({layer}) imports {bad}"


def _imports_at_import_time(path: Path) -> set[str]:
    """What a module imports when it is imported: its statements outside functions (and
    outside `if TYPE_CHECKING:` blocks)."""
    found: set[str] = set()

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            visit(ast.iter_child_nodes(node))

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found


CORE = _modules("agents/core")


@pytest.mark.parametrize("path", CORE, ids=[str(p.relative_to(ROOT)) for p in CORE])
def test_the_core_loads_yaml_only_when_a_yaml_file_is_read(path):
    """The native format's YAML flavour imports PyYAML inside the functions that read or
    write YAML, so importing the core (or formats, or the CX format) never loads it.

    (That the core loads no Django is the rule above, over every import of every core
    module; it replaces the subprocesses that imported each module to look.)"""
    loaded = sorted(m for m in _imports_at_import_time(path) if m.split(".")[0] == "yaml")
    assert not loaded, f"{path.relative_to(ROOT)} imports {loaded} at import time"


def test_the_rules_cover_every_module_of_the_core_and_the_sandbox():
    """A module is checked by being on disk: nothing below the two packages is left out."""
    checked = {path for layer, path in CASES}
    for package in ("agents/core", "agents/sandbox"):
        on_disk = set((ROOT / package).rglob("*.py"))
        assert on_disk and on_disk <= checked, sorted(map(str, on_disk - checked))


def test_views_and_api_write_only_through_services():
    """Adapters never save models themselves: no `.save(`/`.objects.create(` in them."""
    offenders = []
    for where in ("designer", "agents/api"):
        for path in _modules(where):
            text = path.read_text(encoding="utf-8")
            if ".save(" in text or ".objects.create(" in text or ".delete()" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


# The one door (docs/architecture.md): only the sandbox door (services/sandbox_door.py)
# opens the sandbox, and the system check reads the host's protections. Batch callers
# borrow its bounded runner.
SANDBOX_DOORS = {"agents/services/sandbox_door.py", "agents/checks.py"}


def test_only_the_sandbox_door_imports_the_sandbox():
    offenders = sorted(
        str(path.relative_to(ROOT))
        for where in ("agents", "designer", "server")
        for path in _modules(where)
        if not path.is_relative_to(ROOT / "agents" / "sandbox")
        and str(path.relative_to(ROOT)) not in SANDBOX_DOORS
        and any(n == "agents.sandbox" or n.startswith("agents.sandbox.") for n in _imports(path))
    )
    assert not offenders, f"{offenders} import agents.sandbox: go through services.sandbox_door"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("package", ["agents/api", "agents/core/formats"])
def test_the_modules_of_a_package_import_each_other_one_way(package):
    """No import cycle between the modules of the API (views, actions, version views...)
    or of the native format: each leans on `base`/`schema`, never back."""
    modules = {_module_name(p): p for p in _modules(package)}
    edges = {
        name: {
            other
            for imported in _imports(path)
            for other in modules
            if other != name
            and (imported == other or imported.startswith(other + "."))
            and not (other == package.replace("/", ".") and imported != other)
        }
        for name, path in modules.items()
    }

    def cycle_from(start: str, seen: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in sorted(edges[start]):
            if nxt in seen:
                return (*seen[seen.index(nxt) :], nxt)
            found = cycle_from(nxt, (*seen, nxt))
            if found:
                return found
        return None

    for name in sorted(modules):
        found = cycle_from(name, (name,))
        assert found is None, " -> ".join(found)


def test_no_import_cycle_anywhere_in_the_product():
    """No module of agents/ or designer/ reaches itself through imports, deferred ones
    (inside functions) included: each import names the longest module it can mean."""
    paths = [
        p
        for where in ("agents", "designer", "server")
        for p in _modules(where)
        if not p.is_relative_to(ROOT / "agents" / "core" / "adk" / "shipped")
    ]
    modules = {_module_name(p): p for p in paths}

    def target(imported: str) -> str | None:
        while imported and imported not in modules:
            imported = imported.rpartition(".")[0]
        return imported or None

    def imported_by(path: Path) -> set[str]:
        # `from pkg import sub` imports the module pkg.sub (not a cycle through pkg's
        # __init__); `from pkg import name` imports pkg.
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else node.module)
        return found

    edges = {
        name: {t for i in imported_by(path) if (t := target(i)) not in (None, name)}
        for name, path in modules.items()
    }
    done: set[str] = set()

    def cycle_from(start: str, seen: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in sorted(edges[start]):
            if nxt in seen:
                return (*seen[seen.index(nxt) :], nxt)
            if nxt not in done:
                found = cycle_from(nxt, (*seen, nxt))
                if found:
                    return found
                done.add(nxt)
        return None

    for name in sorted(modules):
        found = cycle_from(name, (name,))
        assert found is None, " -> ".join(found)
        done.add(name)
