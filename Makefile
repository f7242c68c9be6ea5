# The two commands: `make run` and `make test`. Both set everything up first and are quick when already set up.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test lint bench clean

setup: $(STAMP) node_modules/.installed

# Re-install only when a requirements file changes.
$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $(STAMP)

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch node_modules/.installed

# Runs the whole system locally on Azurite (see README "Running locally").
run: setup
	$(BIN)/python -m devhost run

# Starts its own Azurite on free ports, runs the whole suite, stops Azurite; non-zero on any failure.
test: setup
	$(BIN)/python tools/azurite.py -- $(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: setup
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) node_modules .azurite .pytest_cache
