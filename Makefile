# The two commands of the README: `make run` and `make test`. Everything else supports them.
SHELL := /bin/bash
.DEFAULT_GOAL := run
PORT ?= 8000
HOST ?= 127.0.0.1
VENV := .venv
PY := $(VENV)/bin/python
# Development settings for `make run`; production reads the same variables
# (docs/operations/configuration.md).
# Django's "development server" banner is hidden: the line `make run` prints says what serves.
RUN_ENV := DEBUG=$${DEBUG:-true} DJANGO_RUNSERVER_HIDE_WARNING=true
PYTEST_ARGS ?=

.PHONY: docs docs-serve messages run worker test test-only install install-test lock lock-check chromium sandbox-deps lint bench clean assets assets-check bytecode

# What gets installed comes from uv.lock (uv's lock file: every package of the runtime set and
# of each extra, pinned, with hashes), never from a fresh resolution: `make run` installs the
# runtime set (and the docs extra, to build the site it serves at /docs/), `make test` and CI
# add the `test` extra. `make lock` updates uv.lock after a change to pyproject.toml; CI fails
# when the two disagree (`uv lock --check`). uv itself is pinned by version and hash below and
# installed into the venv by pip; it never downloads a Python (UV_PYTHON_DOWNLOADS=never).
# One stamp each, rebuilt when pyproject.toml or uv.lock changes; the installs' output goes
# to $(INSTALL_LOG), the screen gets one line (or the log's tail on a failure).
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
INSTALL_LOG := $(VENV)/install.log
# The documentation site (see `docs` below): defined here, before the rules that name them.
DOCS_STAMP := site/.built
DOCS_LOG := $(VENV)/docs.log
DOCS_ENV := NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true
DOCS_SOURCES := mkdocs.yml $(shell find docs -type f 2>/dev/null)
UV := $(VENV)/bin/uv
UV_ENV := UV_PROJECT_ENVIRONMENT=$(VENV) UV_PYTHON_DOWNLOADS=never UV_NO_PROGRESS=1 UV_PYTHON=$(PY)
UV_VERSION := 0.13.9
# sha256 of uv $(UV_VERSION)'s wheels for Linux and macOS (PyPI), checked by pip --require-hashes.
UV_HASHES := d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19 \
  ecb6028d79dc96fbeafffe5c8af62a7099487ebc05a701e76714eebcffd06375 \
  5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe \
  2c45530751517d6c3bbc69a19473f6effe47cce047bede01ffd8af7ea7b36b25 \
  c16ed11e013557536b3e60065f1b912f6407bd6518e041b961e23ef9e6b4fbf5 \
  66c512266d633bef48384a1f53003f41f2a8e7b36fe6e7fbfd3e0fd52d96fa63 \
  dd6f4f93ddf8a668c73f0945f3638444b2140a4e15a3912067493fc6335543e4

# A Python >= 3.12 (Django 6): $PYTHON if set, else the first suitable one on this machine;
# then uv, pinned, in the venv.
define ENSURE_VENV
if [ ! -x "$(PY)" ] || ! "$(PY)" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
  interpreter=""; \
  for candidate in "$${PYTHON:-}" python3.13 python3.12 python3 \
      $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3 /root/.pyenv/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV) \
      /usr/bin/python3.13 /usr/bin/python3.12 /usr/local/bin/python3.13 /usr/local/bin/python3.12; do \
    [ -n "$$candidate" ] || continue; \
    path=$$(command -v "$$candidate" 2>/dev/null) || continue; \
    if "$$path" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then interpreter=$$path; break; fi; \
  done; \
  if [ -z "$$interpreter" ]; then \
    echo "error: Statecraft needs Python 3.12 or newer (Django 6) and none was found." >&2; \
    echo "       Install one (e.g. apt-get install python3.12, or pyenv install 3.13) or run: make PYTHON=/path/to/python3.12 ..." >&2; \
    exit 1; \
  fi; \
  echo "Creating $(VENV) with $$interpreter ($$("$$interpreter" -V))"; \
  rm -rf "$(VENV)"; "$$interpreter" -m venv "$(VENV)"; \
fi; \
if ! "$(UV)" --version 2>/dev/null | grep -q " $(UV_VERSION)"; then \
  { echo "uv==$(UV_VERSION) \\"; for h in $(UV_HASHES); do echo "  --hash=sha256:$$h \\"; done; echo; } > "$(VENV)/uv-requirements.txt"; \
  if ! PIP_DISABLE_PIP_VERSION_CHECK=1 "$(PY)" -m pip install --quiet --require-hashes --no-deps -r "$(VENV)/uv-requirements.txt" >>"$(INSTALL_LOG)" 2>&1; then \
    echo "error: installing uv $(UV_VERSION) failed; see $(INSTALL_LOG)" >&2; tail -n 20 "$(INSTALL_LOG)" >&2; exit 1; \
  fi; \
fi
endef

# $(call UV_SYNC,label,extra flags): install what uv.lock pins; one line on the screen.
# --compile-bytecode: pip wrote the packages' .pyc at install, uv does not by default, and
# where PYTHONDONTWRITEBYTECODE is set every process then compiled Django, DRF, jsonschema…
# again: ~2.5 s of CPU in each `manage.py` start (docs/benchmarks/evaluate.md).
define UV_SYNC
echo "Installing $(1) from uv.lock (log: $(INSTALL_LOG))"; \
if ! $(UV_ENV) "$(UV)" sync --frozen --inexact --compile-bytecode $(2) >>"$(INSTALL_LOG)" 2>&1; then \
  echo "error: the install failed; the end of $(INSTALL_LOG):" >&2; tail -n 30 "$(INSTALL_LOG)" >&2; exit 1; \
fi
endef

$(RUN_STAMP): pyproject.toml uv.lock
	@set -e; \
	$(ENSURE_VENV); \
	$(call UV_SYNC,the runtime dependencies,--extra docs); \
	touch "$@"

$(TEST_STAMP): pyproject.toml uv.lock
	@set -e; \
	$(ENSURE_VENV); \
	$(call UV_SYNC,the runtime and test dependencies,--extra docs --extra test); \
	touch "$@" "$(RUN_STAMP)"

# Resolve pyproject.toml again and write uv.lock (commit it); `lock-check` is CI's check.
lock:
	@set -e; $(ENSURE_VENV); $(UV_ENV) "$(UV)" lock

lock-check:
	@set -e; $(ENSURE_VENV); $(UV_ENV) "$(UV)" lock --check

install: $(RUN_STAMP)

install-test: $(TEST_STAMP)

run: $(RUN_STAMP) sandbox-deps bytecode $(DOCS_STAMP)
	@echo "Preparing the database (migrations, demo apps)"
	@$(RUN_ENV) $(PY) manage.py migrate --no-input --verbosity 0
	@$(RUN_ENV) $(PY) manage.py load_demo
	@echo "Serving Statecraft on http://$(HOST):$(PORT)/  (admin: http://$(HOST):$(PORT)/admin/), with one worker for jobs"
	@# The web server and one worker together; Ctrl-C (or the server ending) stops both.
	@$(RUN_ENV) bash -c '$(PY) manage.py worker & worker=$$!; \
	  trap "kill $$worker 2>/dev/null; wait $$worker 2>/dev/null" EXIT; \
	  $(PY) manage.py runserver "$(HOST):$(PORT)"'

# The documentation site (MkDocs, Material theme; docs/ and mkdocs.yml) built into site/,
# which the app serves at /docs/. `make docs` builds it with --strict (a broken link or
# anchor fails: CI runs it); `make run` builds it when docs/ changed, and goes on without it
# (saying where the log is) if the build fails. `make docs-serve` reads it with live reload.
$(DOCS_STAMP): $(RUN_STAMP) $(DOCS_SOURCES)
	@echo "Building the documentation site for /docs/ (log: $(DOCS_LOG))"
	@if $(DOCS_ENV) $(PY) -m mkdocs build --strict >"$(DOCS_LOG)" 2>&1; then touch "$@"; \
	else echo "warning: the documentation site did not build (/docs/ will say so); see $(DOCS_LOG)" >&2; fi

docs: $(RUN_STAMP)
	$(DOCS_ENV) $(PY) -m mkdocs build --strict
	@touch $(DOCS_STAMP)

docs-serve: $(RUN_STAMP)
	$(DOCS_ENV) $(PY) -m mkdocs serve --dev-addr 127.0.0.1:8001

# A worker for jobs (Run all, evaluate, version diffs) in the foreground (docs/operations/jobs.md).
worker: $(RUN_STAMP) sandbox-deps bytecode
	@$(RUN_ENV) $(PY) manage.py migrate --no-input --verbosity 0
	@$(RUN_ENV) $(PY) manage.py worker

# The sandbox's OS layer (docs/designer/sandbox.md): bubblewrap for the namespaces and the
# read-only root, libseccomp for the seccomp filters. Debian packages; skipped when present.
sandbox-deps:
	@if [ "$$(uname -s)" = Linux ] && { ! command -v bwrap >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; }; then \
	  echo "Installing bubblewrap and libseccomp2 for the sandbox"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq bubblewrap libseccomp2 >/dev/null; \
	fi

# Debian's Chromium for the browser tests (Playwright's own browser download is not used).
chromium:
	@if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then \
	  echo "Installing Debian's chromium for the browser tests"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

# axe-core (the browser tests' accessibility check) is an npm devDependency of frontend/.
AXE := frontend/node_modules/axe-core/axe.min.js
$(AXE): frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund
	@touch $(AXE)

test: $(TEST_STAMP) chromium sandbox-deps $(AXE) test-only

# Three workers on this 2-core machine: the suite waits (browser debounces, real worker,
# gunicorn and cxas processes) more than it computes, so a third worker fills the gaps
# (measured: -n 2 8 min 59 s, -n 3 5 min 46 s, -n 4 6 min 06 s, same commits, docs/development/tests.md).
TEST_WORKERS ?= 3

# The project's bytecode, written once: where PYTHONDONTWRITEBYTECODE is set (this
# machine's images set it), every process (each test worker, `manage.py` command, job
# worker, gunicorn worker, sandbox session) would compile ~430 modules again (~0.3 s of
# CPU each). Python still reads .pyc files it may not write, and recompiles a stale one.
bytecode:
	@$(PY) -m compileall -q -j 0 agents designer server tests bench manage.py >/dev/null

test-only: bytecode
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# The compile benchmark, then the evaluate figure of record (docs/benchmarks/evaluate.md:
# bella_notte's `manage.py evaluate` as a ratio to `python3 -c "sum(range(10**7))"`).
bench: $(TEST_STAMP) sandbox-deps bytecode
	@$(call UV_SYNC,the benchmarks' extra,--extra docs --extra test --extra bench)
	$(PY) bench/compile_bench.py
	$(PY) bench/evaluate_bench.py --repeats 3

# The designer's editors (CodeMirror 6): frontend/ holds the npm sources and lockfile; the
# bundle static/js/editor.bundle.js is committed, so `make run` needs no Node. Rebuild it
# after changing frontend/ (needs Node >= 18 and the npm registry).
assets:
	cd frontend && npm ci --no-audit --no-fund && node build.mjs

# CI: a fresh build from the lockfile must equal the committed bundle.
assets-check:
	cd frontend && npm ci --no-audit --no-fund && node build.mjs "$$(pwd)/../.assets-check.js"
	@if cmp -s .assets-check.js static/js/editor.bundle.js; then rm -f .assets-check.js; echo "static/js/editor.bundle.js matches frontend/ and its lockfile"; \
	else rm -f .assets-check.js; echo "error: static/js/editor.bundle.js differs from a build of frontend/ (run make assets and commit)" >&2; exit 1; fi

# The translation catalogs (docs/operations/languages.md): extract, keep the committed
# form (no wrapping, obsolete entries kept), compile. Translate the new entries, run it again.
MESSAGES_IGNORE := --ignore='.venv/*' --ignore='tests/*' --ignore='site/*' --ignore='docs/*'
messages: $(TEST_STAMP)
	@DEBUG=true $(PY) manage.py makemessages --no-wrap -l fr -l de $(MESSAGES_IGNORE) --ignore='frontend/*'
	@DEBUG=true $(PY) manage.py makemessages --no-wrap -d djangojs -l fr -l de $(MESSAGES_IGNORE) --ignore='frontend/node_modules/*' --ignore='static/js/editor.bundle.js'
	@cd locale && DEBUG=true ../$(PY) ../manage.py compilemessages -l fr -l de

clean:
	rm -rf $(VENV) staticfiles site
	find agents designer server tests bench -name __pycache__ -prune -exec rm -rf {} +
