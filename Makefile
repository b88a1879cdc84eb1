# The two commands of the README: `make run` and `make test`. Everything else supports them.
SHELL := /bin/bash
.DEFAULT_GOAL := run
PORT ?= 8000
HOST ?= 127.0.0.1
VENV := .venv
PY := $(VENV)/bin/python
# Development settings for `make run`; production reads the same variables (see README).
RUN_ENV := DEBUG=$${DEBUG:-true}
PYTEST_ARGS ?=

.PHONY: run worker test test-only install install-test chromium sandbox-deps lint bench clean assets assets-check

# What `make run` installs is the project's runtime dependencies only; `make test` (and CI)
# installs the `test` extra on top (pytest, Playwright, ruff, and the libraries only tests use:
# google-cloud-ces, google-adk). One stamp each, both rebuilt when pyproject.toml changes; the
# test install satisfies `make run` too, so `make run` after `make test` installs nothing more.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test

# A Python >= 3.12 (Django 6): $PYTHON if set, else the first suitable one on this machine.
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
"$(PY)" -m pip install --quiet --upgrade pip
endef

$(RUN_STAMP): pyproject.toml
	@set -e; \
	$(ENSURE_VENV); \
	"$(PY)" -m pip install --quiet --editable .; \
	touch "$@"

$(TEST_STAMP): pyproject.toml
	@set -e; \
	$(ENSURE_VENV); \
	"$(PY)" -m pip install --quiet --editable '.[test]'; \
	touch "$@" "$(RUN_STAMP)"

install: $(RUN_STAMP)

install-test: $(TEST_STAMP)

run: $(RUN_STAMP) sandbox-deps
	@$(RUN_ENV) $(PY) manage.py migrate --no-input
	@$(RUN_ENV) $(PY) manage.py load_demo
	@echo "Serving Statecraft on http://$(HOST):$(PORT)/  (admin: http://$(HOST):$(PORT)/admin/), with one worker for jobs"
	@# The web server and one worker together; Ctrl-C (or the server ending) stops both.
	@$(RUN_ENV) bash -c '$(PY) manage.py worker & worker=$$!; \
	  trap "kill $$worker 2>/dev/null; wait $$worker 2>/dev/null" EXIT; \
	  $(PY) manage.py runserver "$(HOST):$(PORT)"'

# A worker for jobs (Run all, evaluate, version diffs) in the foreground (README, "Jobs").
worker: $(RUN_STAMP) sandbox-deps
	@$(RUN_ENV) $(PY) manage.py migrate --no-input
	@$(RUN_ENV) $(PY) manage.py worker

# The sandbox's OS layer (README, "The sandbox"): bubblewrap for the namespaces and the
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
# (measured: -n 2 8 min 59 s, -n 3 5 min 46 s, -n 4 6 min 06 s, same commits, README "Tests").
TEST_WORKERS ?= 3

test-only:
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

bench: $(TEST_STAMP)
	$(PY) -m pip install --quiet --editable '.[test,bench]'
	$(PY) bench/compile_bench.py

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

clean:
	rm -rf $(VENV) staticfiles
