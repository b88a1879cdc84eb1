"""MkDocs hook: pages that must not drift from the code are filled in from it at build time.

- ``<!-- cli: NAME -->`` becomes the ``manage.py help NAME`` of the command as it is today.
(The diagnostic codes' table, docs/reference/diagnostics.md, is checked against the registry
by ``tests/test_docs.py`` instead: ``python -m agents.core.codes`` prints it.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = re.compile(r"<!-- cli: ([a-z_]+) -->")
# The options every Django command has; the page lists the command's own.
COMMON = (
    "--version",
    "-v {0,1,2,3}",
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
)


@cache
def command_help(name: str) -> str:
    env = {**os.environ, "DEBUG": "true", "DJANGO_SETTINGS_MODULE": "designer.settings"}
    out = subprocess.run(
        [sys.executable, "manage.py", "help", name],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    kept, skipping = [], False
    for line in out.splitlines():
        stripped = line.strip()
        if line.startswith("  -") or line.startswith("  --"):
            skipping = stripped.startswith(COMMON) or stripped.startswith("-v, --verbosity")
        elif not line.startswith("    ") or not stripped:
            skipping = False
        if not skipping:
            kept.append(line.rstrip())
    return "```text\n" + "\n".join(kept).strip() + "\n```"


def on_page_markdown(markdown, page, config, files):
    return CLI.sub(lambda m: command_help(m.group(1)), markdown)


def on_post_build(config):
    """Material's language selector fetches the sitemap of the language it is in
    (``/docs/fr/sitemap.xml``) to find the same page in the other language; the i18n
    plugin writes only the site's own. Give each language tree the site's sitemap (every
    language's build ends here; whichever comes last finds them all)."""
    import shutil

    root = Path(config["site_dir"])
    for language in ("fr", "de"):
        for name in ("sitemap.xml", "sitemap.xml.gz"):
            if (root / language).is_dir() and (root / name).exists():
                shutil.copyfile(root / name, root / language / name)
