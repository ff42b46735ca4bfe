# One command each on a fresh clone: `make eval` (the main job) and `make test` (the test suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# `make eval` and `make test` leave no process running: the embedded PostgreSQL clusters they used are
# released when they finish (whatever the outcome), and stopped when no other live process holds a
# lease on them (another `make eval` in a second terminal keeps its cluster), unless LOCALNEON_KEEP=1.
# A release that fails says why on stderr (a PostgreSQL left running must not go unsaid).
STOP_PG = $(PY) -m localneon.pg release >/dev/null || true
# The test clusters: one set per pytest-xdist worker (tests/pgdirs.py), e.g. .localneon/test-pgdata-gw0,
# and those in LOCALNEON_TEST_ROOT when it is set (`make check` sets it to a folder on tmpfs).
TEST_CLUSTERS = .localneon/test-pgdata* .localneon/scorer-test-pgdata* .localneon/faults-pgdata* \
	$${LOCALNEON_TEST_ROOT:+$$LOCALNEON_TEST_ROOT/test-pgdata* $$LOCALNEON_TEST_ROOT/scorer-test-pgdata* \
	$$LOCALNEON_TEST_ROOT/faults-pgdata*}
# One process for them all: a process each cost about a second of imports per folder (7 s of `make check`).
RELEASE_CLUSTERS = $(PY) -m localneon.pg release $(TEST_CLUSTERS) >/dev/null || true
STOP_CLUSTERS = $(PY) -m localneon.pg stop $(TEST_CLUSTERS) >/dev/null 2>&1 || true
STOP_TEST_PG = $(RELEASE_CLUSTERS)
# $(call THEN_STOP,command,stop): run the command, then the stop, however it ended. A Ctrl-C (or a
# SIGTERM to the group) reaches the command as usual; the recipe's shell only waits it out (its trap
# runs `true`), then stops the clusters and exits with the command's status, so make stops nothing early.
THEN_STOP = trap true INT TERM; status=0; $(1) || status=$$?; $(2); exit $$status
# Parallel test workers: the suite waits on subprocesses and PostgreSQL often enough that one and a half
# workers a core keep the cores busy (capped at 4); more only add contention (on 2 cores, 2026-12-01:
# 3 workers 519 s, 4 workers 523-536 s, 5 workers 566 s). Tests of one file stay on one worker (their module
# fixtures run once), handed out in the order tests/conftest.py sorts them (whole-eval files first; not
# pytest-xdist's default of the most tests first, which left the long few-test files for last); a shared
# DATABASE_URL cluster runs serially.
# Python's bytecode caches are written (in git-ignored __pycache__ folders) even where the environment
# says PYTHONDONTWRITEBYTECODE: without them every test worker, trial and server subprocess compiles
# the project and rewrites the tests' asserts again (the fast lane's collection: 12-14 s -> 8 s).
export PYTHONDONTWRITEBYTECODE :=
CORES := $(shell nproc 2>/dev/null || echo 1)
TEST_WORKERS ?= $(if $(DATABASE_URL),0,$(shell n=$$(( (3 * $(CORES) + 1) / 2 )); [ $$n -gt 4 ] && n=4; echo $$n))

.PHONY: eval test test-long check lint typecheck clean server janitor pool dataset bench calibrate ab tune watch smoke npm snapshot validity lock

# What the project installs into the venv (`make PIP_INSTALL_ARGS=-e . ...` to leave out the dev tools).
PIP_INSTALL_ARGS ?= -e '.[dev]'
# The page tests load HTML reports in headless Chromium: Debian's package, installed by `make test` when
# it runs as root with apt-get (as CI does) or with passwordless sudo (GitHub's runners); otherwise one
# line names the command, before any test runs.
CHROMIUM_INSTALL = apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
.PHONY: browser

# A venv that a Ctrl-C cut short (a python without pip) is removed and made again, not used as it is.
# `python -m venv` unpacks pip's wheels into a temp folder to bootstrap it, and a Ctrl-C at the wrong
# moment left that folder in /tmp; here it is a folder beside the venv, removed however the step ends.
VENV_TMP = $(VENV).tmp
$(STAMP): pyproject.toml constraints.txt
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) $(VENV_TMP) && mkdir -p $(VENV_TMP) && \
	  trap 'rm -rf $(VENV_TMP)' EXIT && TMPDIR="$(abspath $(VENV_TMP))" $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --constraint constraints.txt $(PIP_INSTALL_ARGS)
	@touch $(STAMP)

# The newest versions pyproject.toml allows, installed in a venv of their own and written to
# constraints.txt; the project's venv follows at the next make.
LOCK_VENV = $(VENV).lock
lock:  ## Re-pin constraints.txt to the newest versions pyproject.toml allows (then run make validity).
	@rm -rf $(LOCK_VENV) && trap 'rm -rf $(LOCK_VENV) constraints.txt.new' EXIT && $(PYTHON) -m venv $(LOCK_VENV) && \
	  $(LOCK_VENV)/bin/python -m pip install --quiet --upgrade pip && \
	  $(LOCK_VENV)/bin/python -m pip install --quiet $(PIP_INSTALL_ARGS) && \
	  { sed -n '/^#/p' constraints.txt; $(LOCK_VENV)/bin/python -m pip freeze --exclude-editable; } > constraints.txt.new && \
	  mv constraints.txt.new constraints.txt

browser:  ## Install headless Chromium for the page tests (Debian's package; needs root).
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; \
	elif [ "$$EUID" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "make: installing headless Chromium for the page tests (apt-get install chromium)" >&2; \
	  $(CHROMIUM_INSTALL) >/dev/null; \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && command -v apt-get >/dev/null 2>&1; then \
	  echo "make: installing headless Chromium for the page tests (sudo apt-get install chromium)" >&2; \
	  sudo -n bash -c '$(CHROMIUM_INSTALL)' >/dev/null; \
	else echo "make: the page tests need headless Chromium; install it with: sudo apt-get install -y chromium" >&2; \
	  exit 2; fi

eval: $(STAMP)  ## Run every eval in evals/ through the real `braintrust eval` CLI.
	@$(call THEN_STOP,$(PY) -m evals,$(STOP_PG))

smoke: $(STAMP)  ## A real open-weights model through both protocols (llama-server built into .localmodel/; docs/local-models.md).
	@$(call THEN_STOP,$(PY) -m localmodel smoke,$(STOP_PG))

# The verifier lab: every labelled behaviour in datasets/validity/ played by a scripted model through the
# real CLI (on the twin, and on Neon's npm server where Node is), the baselines over every case; writes
# docs/validity.md and ends with one JSON line; non-zero on a disagreement no known limit lists.
# Its cluster is throwaway, so it goes beside the tests' (on tmpfs where there is room, ON_TMPFS below),
# unless LOCALNEON_PGDATA says where: the lab clones a database several times a trial, far cheaper there.
validity: $(STAMP)  ## How often the verdict is wrong: false alarms and misses per score and for the gate (docs/validity.md).
	@$(ON_TMPFS); export LOCALNEON_PGDATA="$${LOCALNEON_PGDATA:-$${LOCALNEON_TEST_ROOT:+$$LOCALNEON_TEST_ROOT/validity-pgdata}}"; \
	$(call THEN_STOP,$(PY) -m validity --write-page docs/validity.md,$(STOP_PG))

calibrate: $(STAMP)  ## Measure the factuality judge against the hand labels in datasets/judge/ (needs a judge).
	$(PY) -m evals.calibrate

PYTEST = $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
# Every lane's clusters are on tmpfs where /dev/shm is one with room (tests/pgdirs.py): a database clone
# there costs a fraction of its CPU on a disk, and the suite creates thousands. They stay there, like
# .localneon/'s, for the next run (120-250 MB a worker; `make clean` removes them); elsewhere, or with
# LOCALNEON_TEST_ROOT=.localneon, the lanes use .localneon/.
ON_TMPFS = export LOCALNEON_TEST_ROOT="$${LOCALNEON_TEST_ROOT:-$$($(PY) -m tests.pgdirs tmpfs)}"
test: $(STAMP) browser  ## Run the test suite (embedded PostgreSQL, local Neon server, fake remote APIs).
	@$(ON_TMPFS); $(call THEN_STOP,$(PYTEST) --durations=15 -m 'not long',$(STOP_TEST_PG))

# The journeys at full scale (`pytest.mark.long`: every bundled case, every nightly shard, two whole
# `make eval`s at once, ...) whose parts `make test` checks smaller; CI and the nightly run both.
test-long: $(STAMP) browser  ## Run the full-scale journeys `make test` leaves out (docs/development.md).
	@$(ON_TMPFS); $(call THEN_STOP,$(PYTEST) --durations=15 -m long,$(STOP_TEST_PG))

check: $(STAMP)  ## The fast lane: every test but whole evals in subprocesses, fault injection and npm servers.
	@$(ON_TMPFS); $(call THEN_STOP,$(PYTEST) --fast -m 'not long' -q,$(STOP_TEST_PG))

# Neon's npm packages the tests drive install on first use; CI installs them first, so that
# `make test`'s time is the suite's and not npm's (~525 MB for the published server).
npm: $(STAMP)  ## Install the npm packages the tests use (Neon's published server 0.6.5, DBHub 1.4.0, the client libraries).
	$(PY) -m harness.servers.neon.published.install
	$(PY) -m harness.servers.dbhub.published.install
	@$(call THEN_STOP,$(PY) -m harness.servers.neon.worn_surface take,$(STOP_PG))
	$(PY) -m tests.localneon.npm_packages

# The hosted server's current tool surface (needs NEON_API_KEY): cached beside the embedded cluster and
# then worn by every local run in place of the published one (docs/local-twin.md).
snapshot: $(STAMP)  ## Take Neon's hosted MCP server's tool surface for the local twin to wear (needs NEON_API_KEY).
	@$(call THEN_STOP,$(PY) -m harness.servers.neon.worn_surface hosted,$(STOP_PG))

lint: $(STAMP)  ## ruff and mypy.
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy harness scorers localneon evals braintrust_run tuning analysis localmodel validity tests

ab: $(STAMP)  ## Paired, adaptive A/B: make ab A=<variant file|@prompt|provider:model> B=<...> [MAX=20]
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make ab A=<variant> B=<variant> [MAX=20]" >&2; exit 2; }
	@$(call THEN_STOP,$(PY) -m evals.ab "$(A)" "$(B)" --max $(or $(MAX),20),$(STOP_PG))

tune: $(STAMP)  ## Tune the tool descriptions under the acceptance rule: make tune [FROM=<variant file>] [MODEL=<provider:model,...>] [BUDGET=<usd>] (docs/tuning.md).
	@$(call THEN_STOP,$(if $(MODEL),EVAL_MODEL="$(MODEL)") $(PY) -m tuning $(if $(FROM),--from "$(FROM)") $(if $(SEED),--seed "$(SEED)") $(if $(BUDGET),--budget-usd "$(BUDGET)"),$(STOP_PG))

watch: $(STAMP)  ## The server's own tool changes since the last watch, A/B'd on the cases they touch: make watch [BASELINE=<surface.json>] [MAX=5] (docs/tuning.md#the-watch).
	@$(call THEN_STOP,$(PY) -m tuning.watch $(if $(BASELINE),--baseline "$(BASELINE)") $(if $(MAX),--max $(MAX)) $(if $(SUMMARY),--summary "$(SUMMARY)"),$(STOP_PG))

server: $(STAMP)  ## Serve the local Neon-compatible MCP server over Streamable HTTP on :8787.
	@$(call THEN_STOP,$(PY) -m localneon --transport http --port 8787,$(STOP_PG))

janitor: $(STAMP)  ## Delete leftovers of crashed runs (see docs/servers.md).
	@$(call THEN_STOP,$(PY) -m harness.servers.neon.janitor,$(STOP_PG))

pool: $(STAMP)  ## Check the Neon pool projects and say what setup would create (dry run; see docs/servers.md).
	$(PY) -m harness.pool setup

dataset: $(STAMP)  ## Push each scenario's changed cases to its Braintrust dataset (docs/braintrust.md#datasets).
	$(PY) -m braintrust_run.dataset push

bench: $(STAMP)  ## Benchmarks: the local server's operations, then the harness's own per-trial overhead.
	@$(call THEN_STOP,$(PY) -m localneon.bench && $(PY) -m harness.measure.bench && $(PY) -m braintrust_run.bench_list,$(STOP_PG))

clean:  ## Remove the virtual environment, the embedded database and local results.
	-$(PY) -m localneon.pg stop 2>/dev/null
	-$(STOP_CLUSTERS)
	-export LOCALNEON_TEST_ROOT="$$($(PY) -m tests.pgdirs tmpfs-folder 2>/dev/null)"; \
	  [ -n "$$LOCALNEON_TEST_ROOT" ] && { $(STOP_CLUSTERS); $(PY) -m localneon.pg stop "$$LOCALNEON_TEST_ROOT/validity-pgdata" \
	  >/dev/null 2>&1; rm -rf "$$LOCALNEON_TEST_ROOT"; }
	rm -rf $(VENV) .localneon results .pytest_cache .mypy_cache .ruff_cache *.egg-info
