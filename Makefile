# One command each on a fresh clone: `make eval` (the main job) and `make test` (the test suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# `make eval` and `make test` leave no process running: the embedded PostgreSQL clusters they started
# are stopped when they finish (whatever the outcome), unless LOCALNEON_KEEP=1.
STOP_PG = if [ "$${LOCALNEON_KEEP:-0}" != 1 ]; then $(PY) -m localneon.pg stop >/dev/null 2>&1 || true; fi
# The test clusters: one set per pytest-xdist worker (tests/pgdirs.py), e.g. .localneon/test-pgdata-gw0.
TEST_CLUSTERS = .localneon/test-pgdata* .localneon/scorer-test-pgdata* .localneon/faults-pgdata*
STOP_CLUSTERS = for dir in $(TEST_CLUSTERS); do \
	[ -d "$$dir" ] && LOCALNEON_PGDATA=$$dir $(PY) -m localneon.pg stop >/dev/null 2>&1 || true; done
STOP_TEST_PG = if [ "$${LOCALNEON_KEEP:-0}" != 1 ]; then $(STOP_CLUSTERS); fi
# Parallel test workers: half the suite's time is spent waiting on subprocesses and PostgreSQL. Tests of
# one file stay on one worker (their module fixtures run once); a shared DATABASE_URL cluster runs serially.
TEST_WORKERS ?= $(if $(DATABASE_URL),0,2)

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
	@status=0; $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile || status=$$?; $(STOP_TEST_PG); exit $$status

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
	-$(STOP_CLUSTERS)
	rm -rf $(VENV) .localneon results .pytest_cache .mypy_cache .ruff_cache *.egg-info
