# The two commands: `make run` (dashboard + worker + demo data) and `make test` (whole suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
export LITELLM_LOCAL_MODEL_COST_MAP := True
# Keep compiled bytecode between processes (scripts/test says why).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-fast test-only install install-run lint typecheck mastra-pack bench-throughput bench-pages bench-rescore clean

# Installs with uv (from PyPI, into the virtualenv: about ten times faster than pip on a first
# start, same pinned constraints); falls back to pip where uv cannot be installed or fails.
# Set PIP_ONLY=1 to always use pip.
PIP_INSTALL = if [ -z "$${PIP_ONLY:-}" ] && { test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet uv >/dev/null 2>&1; }; \
	then $(BIN)/uv pip install --quiet --python $(BIN)/python $(1) || $(BIN)/python -m pip install --quiet $(1); \
	else $(BIN)/python -m pip install --quiet $(1); fi

# What running needs (`make run`): the app and its dependencies only.
$(BIN)/.installed-run: pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(call PIP_INSTALL,-c constraints.txt -e .)
	touch $@

# What testing needs on top (`make test`, lint, types): the test tools and the Python client.
$(BIN)/.installed: $(BIN)/.installed-run pyproject.toml constraints.txt clients/python/pyproject.toml
	$(call PIP_INSTALL,-c constraints.txt -e '.[dev]')
	$(call PIP_INSTALL,-c constraints.txt -e ./clients/python)
	touch $@

install-run: $(BIN)/.installed-run

install: $(BIN)/.installed

## Run the dashboard on the embedded stack (SQLite + filesystem broker): web, worker, demo data.
## Installs only what running needs (no test tools).
run: install-run
	./scripts/run

## Run the whole test suite (installs Debian's chromium for the browser tests, and nodejs and
## npm for the Mastra client's, if missing): scripts/test, its two passes.
test: install
	./scripts/ensure-chromium
	./scripts/ensure-node
	./scripts/test

## The inner loop: everything but the tests that start Celery workers or drive a browser and
## the slow sweeps (marker `slow`: every route or form with malformed input, every module
## imported in a fresh process, npm pack, gunicorn), one process more than the cores (pytest-xdist).
test-fast: install
	$(BIN)/pytest -m "not worker and not browser and not slow" -n $$(($$(nproc) + 1))

## The whole suite without installing anything.
test-only:
	./scripts/test

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy evalsite judge_engine teams rubrics runs judging reviews

## Build the Mastra scorer (clients/mastra) and pack it into an installable tarball,
## clients/mastra/evalsite-mastra-<version>.tgz: `npm install <that path> @mastra/core zod`.
mastra-pack:
	./scripts/ensure-node
	cd clients/mastra && MASTRA_TELEMETRY_DISABLED=1 npm ci --no-audit --no-fund && MASTRA_TELEMETRY_DISABLED=1 npm pack

bench-throughput: install
	$(BIN)/python bench/throughput

bench-pages: install
	$(BIN)/python bench/pages

bench-rescore: install
	$(BIN)/python bench/rescore

clean:
	rm -rf data .testdata
