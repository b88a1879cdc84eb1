"""CX Agent Studio's own linter for the tests: ``cxas lint`` of ``cxas-scrapi==1.10.0``.

``cxas_lint(app_dir)`` runs Google's linter, offline, on an unpacked CX app folder
(``app.json``, ``agents/``, ``tools/``) and returns its findings. The linter lives in
a virtualenv of its own (its dependencies — pandas, scikit-learn, the Google Cloud
clients — have no place in Statecraft's), created once per machine under
``~/.cache/statecraft/cxas-venv-1.10.0`` (or ``$STATECRAFT_CACHE``) by pip from PyPI,
under a file lock so that pytest-xdist workers wait for one install instead of
racing. The ``cxas`` fixture skips a test, with the reason, only when that install
is impossible (no network, no PyPI).

Which findings count (issue #10): structural and variable rules — what CX itself
refuses or mis-wires — count; the prompt-style rules are opinions on how to write
instructions and tools, not on whether the export is right. ``counts(rule_id)``
is the one definition.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cx_corpus import PACKAGE, VERSION, cache_dir
from tests.cx_tree import corpus_apps

# What the issue names as counting: missing required fields (A002), variables (V100-V104),
# agent and tool references in instructions and agent JSON (I008-I013), the tool's
# function name (T012), structure (S*) and the schema rules (V001-V007: each JSON file
# parsed as CX's own proto message).
COUNTING_RULES = frozenset(
    {
        "A002",
        *(f"V{n}" for n in range(100, 105)),
        *(f"I{n:03d}" for n in range(8, 14)),
        "T012",
        *(f"V{n:03d}" for n in range(1, 8)),
    }
)
COUNTING_PREFIXES = ("S",)
# Opinions on prompt style: required XML sections (I001), ... (I014), an end_session tool
# on the root agent (A005), an agent_action error return in every tool (T001).
OPINION_RULES = frozenset({"I001", "I014", "A005", "T001"})

VENV_NAME = f"cxas-venv-{VERSION}"
_COMPLETE = ".statecraft-complete"  # written last: a venv without it is half-built
INSTALL_TIMEOUT = 1800


class CxasUnavailable(RuntimeError):
    """The linter cannot be installed here (no network, no PyPI, no usable Python)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding of ``cxas lint``; ``file`` is relative to the app folder."""

    rule_id: str
    severity: str  # "error", "warning" or "info"
    file: str
    message: str
    line: int | None = None

    @property
    def counts(self) -> bool:
        return counts(self.rule_id)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"[{self.rule_id} {self.severity}] {where}: {self.message}"


def counts(rule_id: str) -> bool:
    """Whether a finding of this rule is a structural or variable problem of the export."""
    if rule_id in OPINION_RULES:
        return False
    return rule_id in COUNTING_RULES or rule_id.startswith(COUNTING_PREFIXES)


def counting(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.counts]


# ---------------------------------------------------------------- the virtualenv


def venv_dir() -> Path:
    return cache_dir() / VENV_NAME


def _bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / name


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _base_python() -> str:
    """The interpreter behind this test run: Statecraft's own (>= 3.12), and cxas-scrapi
    1.10.0 wants >= 3.10 with wheels of its dependencies (pandas, scikit-learn, ...)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def cxas_venv() -> Path:
    """The virtualenv with ``cxas-scrapi==1.10.0``, created on first use (a minute, once).

    Raises ``CxasUnavailable`` when the package index cannot be reached (no network), and
    ``RuntimeError`` when it can but the install fails (that is a failure, not a skip).
    """
    venv = venv_dir()
    if _usable(venv):
        return venv
    with _locked(venv.with_name(f"{VENV_NAME}.lock")):
        if _usable(venv):  # another worker built it while this one waited
            return venv
        shutil.rmtree(venv, ignore_errors=True)
        # An index named in the environment and out of reach is known before a virtualenv
        # is built for nothing (10 s). (Without PIP_INDEX_URL, pip's own configuration may
        # name other sources: the install is tried, and probed only if it fails.)
        unreachable = _unreachable_index() if os.environ.get("PIP_INDEX_URL") else None
        if unreachable is not None:
            raise CxasUnavailable(unreachable)
        try:
            _run_step([_base_python(), "-m", "venv", str(venv)])
            _run_step(
                [
                    str(_bin(venv, "python")),
                    *("-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
                    *("--retries", "1", "--timeout", "20"),
                    f"{PACKAGE}=={VERSION}",
                ]
            )
        except BaseException:
            shutil.rmtree(venv, ignore_errors=True)  # never leave half a virtualenv
            raise
        (venv / _COMPLETE).write_text(f"{PACKAGE}=={VERSION}\n")
    return venv


def _usable(venv: Path) -> bool:
    """Built to the end, and its interpreter still there (a Python upgrade can remove it)."""
    return (venv / _COMPLETE).exists() and _bin(venv, "python").exists()


def _run_step(command: list[str]) -> None:
    what = " ".join(Path(command[0]).name if i == 0 else c for i, c in enumerate(command[:5]))
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise _failure(f"{what}: no result after {INSTALL_TIMEOUT} s") from exc
    if done.returncode != 0:
        raise _failure(f"{what} failed: {(done.stderr or done.stdout).strip()[-800:]}")


def _unreachable_index() -> str | None:
    """Why the package index cannot be reached, or None when it answers."""
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/")
    try:
        with urllib.request.urlopen(f"{index.rstrip('/')}/{PACKAGE}/", timeout=15):
            pass
    except urllib.error.HTTPError:
        pass  # the index answers
    except (OSError, ValueError) as exc:
        return f"{index} cannot be reached ({exc})"
    return None


def _failure(message: str) -> Exception:
    """A skip (``CxasUnavailable``) when the package index is out of reach, else an error."""
    unreachable = _unreachable_index()
    if unreachable is not None:
        return CxasUnavailable(f"{unreachable}; {message}")
    return RuntimeError(message)


# ---------------------------------------------------------------- running the linter


# A folder's own linter settings are not the linter's verdict on the app: `cxaslint.yaml`
# turns rules off, `gecx-config.json` points the linter at another folder.
LINTER_SETTINGS = ("cxaslint.yaml", "gecx-config.json")


# `cxas lint --json` for each folder named on the command line, in one process (importing
# the rules takes a second or two): the CLI's own handler, its exit code and its output.
_DRIVER = """
import argparse, contextlib, io, json, sys
from cxas_scrapi.cli.app import app_lint
runs = []
for folder in sys.argv[1:]:
    out, code = io.StringIO(), 0
    with contextlib.redirect_stdout(out):
        try:
            app_lint(argparse.Namespace(app_dir=folder, json_output=True))
        except SystemExit as exc:
            code = exc.code
    runs.append({"exit": code, "stdout": out.getvalue()})
print(json.dumps(runs))
"""


def cxas_lint(app_dir: Path) -> list[Finding]:
    """``cxas lint --json`` on an unpacked CX app folder, with every rule at its default
    severity (a ``cxaslint.yaml`` the folder ships is left out): every finding, in the
    linter's order, ``file`` relative to the folder.

    Offline: the rules read only the folder. Raises ``CxasUnavailable`` when the linter
    cannot be installed and ``RuntimeError`` when it does not answer with its JSON report.
    """
    return cxas_lint_many([app_dir])[0]


def cxas_lint_many(app_dirs: Iterable[Path]) -> list[list[Finding]]:
    """``cxas_lint`` of each folder, in one run of the linter."""
    folders = [Path(d).resolve() for d in app_dirs]
    for folder in folders:
        if not (folder / "app.json").exists() and not (folder / "app.yaml").exists():
            raise ValueError(f"{folder} holds no app.json or app.yaml")
    venv = cxas_venv()
    with tempfile.TemporaryDirectory(prefix="cxas-lint-") as tmp:
        copies = []
        for n, folder in enumerate(folders):
            copy = Path(tmp).resolve() / str(n) / folder.name
            shutil.copytree(folder, copy, ignore=_linter_settings(folder))
            copies.append(copy)
        done = subprocess.run(
            [str(_bin(venv, "python")), "-c", _DRIVER, *map(str, copies)],
            capture_output=True,
            text=True,
            timeout=120 + 30 * len(copies),
            check=False,
            cwd=tmp,
            env={**os.environ, "NO_COLOR": "1", "PYTHONWARNINGS": "ignore"},
        )
        try:
            runs = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            runs = None
        if done.returncode != 0 or not isinstance(runs, list) or len(runs) != len(copies):
            raise RuntimeError(
                f"cxas lint did not run (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-800:]}"
            )
        results = []
        for copy, run in zip(copies, runs, strict=True):
            report = _json_report(run["stdout"])
            if report is None or run["exit"] not in (0, 1):
                raise RuntimeError(
                    f"cxas lint gave no report for {copy.name} (exit {run['exit']}): "
                    f"{run['stdout'].strip()[-800:]}"
                )
            results.append([_finding(item, copy) for item in report])
    return results


def _linter_settings(app_dir: Path):
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if Path(folder) == app_dir and n in LINTER_SETTINGS]

    return ignore


def _json_report(stdout: str) -> list[Mapping[str, object]] | None:
    """The JSON list ``--json`` prints (whatever an import may print before it)."""
    start = stdout.find("[")
    while start != -1:
        try:
            value = json.loads(stdout[start:])
        except json.JSONDecodeError:
            start = stdout.find("\n[", start + 1)
            start = start + 1 if start != -1 else -1
            continue
        return value if isinstance(value, list) else None
    return None


def _finding(item: Mapping[str, object], app_dir: Path) -> Finding:
    file = str(item.get("file") or "")
    if Path(file).is_absolute():  # some rules name the file by its full path
        with suppress(ValueError):
            file = Path(file).resolve().relative_to(app_dir).as_posix()
    line = item.get("line")
    return Finding(
        rule_id=str(item.get("rule_id")),
        severity=str(item.get("severity")),
        file=file,
        message=str(item.get("message")),
        line=line if isinstance(line, int) else None,
    )


def cxas_lint_files(files: Mapping[str, bytes]) -> list[Finding]:
    """``cxas_lint`` on an app given as its files (``to_cx_files``), written to a temp folder."""
    return cxas_lint_files_many([files])[0]


def cxas_lint_files_many(apps: Iterable[Mapping[str, bytes]]) -> list[list[Finding]]:
    """``cxas_lint_files`` of each app, in one run of the linter."""
    with tempfile.TemporaryDirectory(prefix="cxas-app-") as tmp:
        roots = []
        for n, files in enumerate(apps):
            root = Path(tmp) / str(n) / "app"
            for path, data in files.items():
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            roots.append(root)
        return cxas_lint_many(roots)


# ---------------------------------------------------------------- the corpus baseline

BASELINE = Path(__file__).with_name("cx_lint_baseline.json")


def corpus_apps_by_name(root: Path) -> dict[str, Path]:
    """``cx_tree.corpus_apps`` keyed by the folder's path in the sdist (``examples/bella_notte``)."""
    return {p.relative_to(root).as_posix(): p for p in corpus_apps(root)}


def baseline() -> dict[str, list[Finding]]:
    """What ``cxas lint`` finds in each corpus app as shipped (``BASELINE``), by app."""
    data = json.loads(BASELINE.read_text(encoding="utf-8"))
    return {app: [Finding(**f) for f in findings] for app, findings in data["apps"].items()}


def write_baseline(root: Path) -> dict[str, list[Finding]]:
    apps = corpus_apps_by_name(root)
    found = dict(zip(apps, cxas_lint_many(apps.values()), strict=True))
    document = {
        "about": f"cxas lint ({PACKAGE}=={VERSION}, every rule at its default severity) on "
        "each app of the sdist as shipped; regenerate with `python -m tests.cx_lint`",
        "apps": {app: [_as_dict(f) for f in findings] for app, findings in found.items()},
    }
    BASELINE.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return found


def _as_dict(finding: Finding) -> dict[str, object]:
    return {
        "rule_id": finding.rule_id,
        "severity": finding.severity,
        "file": finding.file,
        "message": finding.message,
        "line": finding.line,
    }


def new_findings(before: Iterable[Finding], after: Iterable[Finding]) -> list[Finding]:
    """The counting findings of `after` that `before` does not have (as many times)."""
    left = Counter((f.rule_id, f.file, f.message) for f in before if f.counts)
    new = []
    for finding in after:
        key = (finding.rule_id, finding.file, finding.message)
        if not finding.counts:
            continue
        if left[key]:
            left[key] -= 1
        else:
            new.append(finding)
    return new


@pytest.fixture(scope="session")
def cxas() -> Path:
    """The linter's virtualenv; skips (with why) when ``cxas-scrapi`` cannot be installed."""
    try:
        return cxas_venv()
    except CxasUnavailable as exc:
        pytest.skip(f"cxas lint ({PACKAGE}=={VERSION}) cannot be installed here: {exc}")


if __name__ == "__main__":
    from tests.cx_corpus import cx_corpus_root

    for app, findings in write_baseline(cx_corpus_root()).items():
        print(f"{app}: {len(findings)} findings, {len(counting(findings))} counting")
