"""Real CX Agent Studio code for the tests: Google's ``cxas-scrapi`` sdist, unpacked once.

``cx_corpus_root()`` downloads ``cxas-scrapi==1.10.0`` (the sdist) from PyPI with pip into ``~/.cache/statecraft/`` (or ``$STATECRAFT_CACHE``) the first time and returns
the unpacked source tree; nothing third-party is committed.  The ``cx_corpus`` fixture
skips the test, with the reason, only when the download is impossible (no network).

Reusable: ``examples/bella_notte`` holds a real app (agents, callbacks, tools) and
``src/cxas_scrapi/utils/callback_libs.py`` the objects callbacks receive.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

PACKAGE = "cxas-scrapi"
VERSION = "1.10.0"


class CorpusUnavailable(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("STATECRAFT_CACHE", Path.home() / ".cache" / "statecraft"))


def cx_corpus_root() -> Path:
    """The unpacked ``cxas_scrapi-1.10.0`` directory (downloaded and unpacked once)."""
    base = cache_dir() / "cx-corpus"
    root = base / f"cxas_scrapi-{VERSION}"
    if (root / "examples" / "bella_notte").is_dir():
        return root
    base.mkdir(parents=True, exist_ok=True)
    archive = base / f"cxas_scrapi-{VERSION}.tar.gz"
    if not archive.exists():
        # pip prepares the sdist's metadata (installing its build backend in a throwaway
        # environment): a minute or two, once per machine.
        done = subprocess.run(
            [
                sys.executable,
                *("-m", "pip", "download", "--no-deps", "--no-binary", ":all:"),
                *("-d", str(base), f"{PACKAGE}=={VERSION}"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0 or not archive.exists():
            raise CorpusUnavailable(
                f"could not download {PACKAGE}=={VERSION}: {done.stderr.strip()[-500:]}"
            )
    with tarfile.open(archive) as tar:
        tar.extractall(base, filter="data")
    return root


@pytest.fixture(scope="session")
def cx_corpus() -> Path:
    try:
        return cx_corpus_root()
    except (CorpusUnavailable, OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"the CX corpus ({PACKAGE} sdist) cannot be downloaded here: {exc}")
