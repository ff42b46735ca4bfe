# One command each on a fresh clone: `make eval` (the main job) and `make test` (the test suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# `make eval` and `make test` leave no process running: the embedded PostgreSQL clusters they started
# are stopped when they finish (whatever the outcome), unless LOCALNEON_KEEP=1.
STOP_PG = if [ "$${LOCALNEON_KEEP:-0}" != 1 ]; then $(PY) -m localneon.pg stop >/dev/null 2>&1 || true; fi
STOP_TEST_PG = if [ "$${LOCALNEON_KEEP:-0}" != 1 ]; then \
	for dir in .localneon/test-pgdata .localneon/scorer-test-pgdata .localneon/faults-pgdata; do \
	LOCALNEON_PGDATA=$$dir $(PY) -m localneon.pg stop >/dev/null 2>&1 || true; done; fi

.PHONY: eval test lint typecheck clean server janitor pool bench calibrate ab

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

eval: $(STAMP)  ## Run every eval in evals/ through the real `braintrust eval` CLI.
	@status=0; $(PY) -m evals || status=$$?; $(STOP_PG); exit $$status

calibrate: $(STAMP)  ## Measure the factuality judge against the hand labels in datasets/judge/ (needs a judge).
	$(PY) -m evals.calibrate

test: $(STAMP)  ## Run the test suite (embedded PostgreSQL, local Neon server, fake remote APIs).
	@status=0; $(PY) -m pytest || status=$$?; $(STOP_TEST_PG); exit $$status

lint: $(STAMP)  ## ruff and mypy.
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy harness scorers localneon evals analysis tests

ab: $(STAMP)  ## Paired, adaptive A/B: make ab A=<variant file|@prompt|provider:model> B=<...> [MAX=20]
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make ab A=<variant> B=<variant> [MAX=20]" >&2; exit 2; }
	$(PY) -m evals.ab "$(A)" "$(B)" --max $(or $(MAX),20)

server: $(STAMP)  ## Serve the local Neon-compatible MCP server over Streamable HTTP on :8787.
	$(PY) -m localneon --transport http --port 8787

janitor: $(STAMP)  ## Delete leftovers of crashed runs (see README).
	$(PY) -m harness.servers.neon.janitor

pool: $(STAMP)  ## Check the Neon pool projects and say what setup would create (dry run; see README).
	$(PY) -m harness.pool setup

bench: $(STAMP)  ## Benchmarks: the local server's operations, then the harness's own per-trial overhead.
	$(PY) -m localneon.bench
	$(PY) -m harness.bench

clean:  ## Remove the virtual environment, the embedded database and local results.
	-$(PY) -m localneon.pg stop 2>/dev/null
	-LOCALNEON_PGDATA=.localneon/test-pgdata $(PY) -m localneon.pg stop 2>/dev/null
	-LOCALNEON_PGDATA=.localneon/scorer-test-pgdata $(PY) -m localneon.pg stop 2>/dev/null
	-LOCALNEON_PGDATA=.localneon/faults-pgdata $(PY) -m localneon.pg stop 2>/dev/null
	rm -rf $(VENV) .localneon results .pytest_cache .mypy_cache .ruff_cache *.egg-info
