"""Every third-party package the product imports is declared by the extra that needs it.

A fresh `make run` installs the runtime set of uv.lock only: a module that imports a package
which merely came along with another (httpx with the model SDKs, once) works in the test
venv and fails on a new machine. This reads the imports of `agents/` and `designer/` (every
`import`, at any depth: a lazy import inside a function breaks the same way) and maps each to
the distribution that installs it, by the installed distributions' own file lists.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = {"agents", "designer", "server", "tests"}

# Code that runs somewhere other than the app, with the extra that holds its dependencies:
# the ADK runtime shipped inside an exported ADK package (its requirements.txt names
# google-adk; the test extra installs it to run the package).
RUNS_ELSEWHERE = {"agents/core/adk/shipped/": "test"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normal(re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0])


@cache
def declared() -> dict[str, set[str]]:
    """{"runtime": names, extra: names} from pyproject.toml (extras include what they name)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    sets = {"runtime": {_requirement_name(r) for r in project["dependencies"]}}
    extras = project.get("optional-dependencies", {})
    for extra, requirements in extras.items():
        names: set[str] = set()
        for requirement in requirements:
            match = re.match(r"statecraft\[([^\]]+)\]", requirement.strip())
            if match:
                for included in match.group(1).split(","):
                    names |= {_requirement_name(r) for r in extras[included.strip()]}
            else:
                names.add(_requirement_name(requirement))
        sets[extra] = names
    return sets


@cache
def _module_owners() -> dict[str, str]:
    """Dotted module path -> the distribution whose files hold it."""
    owners: dict[str, str] = {}
    for dist in metadata.distributions():
        name = _normal(dist.metadata["Name"] or "")
        for file in dist.files or ():
            parts = Path(str(file)).with_suffix("").parts
            if not parts or str(file).endswith((".dist-info", ".pth")) or ".." in parts:
                continue
            if not str(file).endswith((".py", ".so", ".pyi")) and "__init__" not in parts:
                continue
            dotted = ".".join(p.split(".")[0] for p in parts)
            if dotted.endswith(".__init__"):
                dotted = dotted.removesuffix(".__init__")
            owners.setdefault(dotted, name)
    return owners


def distribution_of(module: str) -> str | None:
    """The distribution installing `module` (or its longest importable parent)."""
    owners = _module_owners()
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        owner = owners.get(".".join(parts[:end]))
        if owner:
            return owner
    return None


def imported_modules(path: Path) -> set[str]:
    """Absolute imports in a file, at any depth (relative imports are first-party)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from google import genai": the name may be a module (google.genai) or not.
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def undeclared_imports(files: list[Path], root: Path = ROOT) -> list[str]:
    """One line per import no extra of `files`' place declares: "file: module (dist)"."""
    sets = declared()
    problems: list[str] = []
    for file in files:
        relative = file.relative_to(root).as_posix()
        extra = next((e for p, e in RUNS_ELSEWHERE.items() if relative.startswith(p)), None)
        allowed = sets["runtime"] | (sets[extra] if extra else set())
        # The sandbox's modules import their siblings by plain name (they run as scripts).
        siblings = {p.stem for p in file.parent.glob("*.py")}
        for module in sorted(imported_modules(file)):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in FIRST_PARTY | siblings:
                continue
            if top == "__future__":
                continue
            dist = distribution_of(module)
            if dist is None:
                # "from package import submodule_or_name": the parent decides.
                dist = distribution_of(module.rsplit(".", 1)[0]) if "." in module else None
            if dist is None or dist not in allowed:
                problems.append(f"{relative}: {module} ({dist or 'not installed'})")
    return problems


def product_files() -> list[Path]:
    return sorted(
        p
        for folder in ("agents", "designer", "server")
        for p in (ROOT / folder).rglob("*.py")
        if "migrations" not in p.parts
    )


def test_every_imported_package_is_declared_by_the_extra_that_needs_it():
    assert undeclared_imports(product_files()) == []


def test_the_check_fails_on_a_module_that_imports_an_undeclared_package(tmp_path):
    # werkzeug is installed here (schemathesis brings it) and declared by no extra.
    probe = tmp_path / "agents" / "probe.py"
    probe.parent.mkdir()
    probe.write_text("def later():\n    from werkzeug.http import parse_date\n")
    assert distribution_of("werkzeug.http") == "werkzeug"
    assert undeclared_imports([probe], root=tmp_path) == [
        "agents/probe.py: werkzeug.http.parse_date (werkzeug)"
    ]


def test_a_package_of_the_test_extra_does_not_satisfy_runtime_code(tmp_path):
    # google-adk is declared, by the test extra only: runtime code may not import it.
    probe = tmp_path / "designer" / "probe.py"
    probe.parent.mkdir()
    probe.write_text("import google.adk\n")
    assert undeclared_imports([probe], root=tmp_path) == [
        "designer/probe.py: google.adk (google-adk)"
    ]
