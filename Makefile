# The two commands: `make run` and `make test` (and `make lint`, which CI runs too). Both set everything up first and are quick when already set up.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test lint bench clean

setup: $(STAMP) node_modules/.installed .venv-infra/.installed

# Re-install only when a requirements file changes.
$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || { $(PY) -m shared.interpreter && $(PY) -m venv $(VENV); }
	@$(BIN)/python -m shared.interpreter
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $(STAMP)

# Checkov (Bicep checks in the suite) pins packages of its own, so it lives in a separate virtualenv.
.venv-infra/.installed: requirements-infra.txt
	@test -x .venv-infra/bin/python || $(PY) -m venv .venv-infra
	.venv-infra/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-infra.txt
	@touch .venv-infra/.installed

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch node_modules/.installed

# Runs the whole system locally on Azurite (see README "Running locally").
run: setup
	$(BIN)/python -m devhost run

# Starts its own Azurite on free ports, runs the whole suite, stops Azurite; non-zero on any failure.
test: setup
	$(BIN)/python tools/azurite.py -- $(BIN)/python -m pytest $(PYTEST_ARGS)

# Lint, format check and type check (mypy, configured in pyproject.toml); non-zero on any finding.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Side-by-side benchmarks with Kreuzberg and MarkItDown (their own virtualenv; see benchmarks/README.md).
bench: setup .venv-bench/.installed
	$(BIN)/python -m benchmarks.compare

.venv-bench/.installed: requirements-bench.txt
	@test -x .venv-bench/bin/python || $(PY) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	@touch .venv-bench/.installed

clean:
	rm -rf $(VENV) .venv-infra .venv-bench node_modules .azurite .pytest_cache
