"""Suite-wide: which cluster a test process uses, and that it leaves none running (`make test` or plain `pytest`)."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator

import pytest

from harness.environment import forget_process_env
from harness.mcp.server_process import LocalServer, ServerEndpoints
from localneon.cluster.pg import release
from tests.pgdirs import FAULTS_PGDATA, SCORER_PGDATA, TEST_PGDATA

# Every local server and cluster a test process starts uses this worker's test data directory, never
# the developer's. Set, not defaulted, and here, where every process (xdist controller and workers)
# reads it first: a worker inherits the controller's environment, and defaulting would keep the
# controller's unsuffixed value, so that all workers shared one cluster that none of them stopped.
if "DATABASE_URL" not in os.environ:
    os.environ["LOCALNEON_PGDATA"] = str(TEST_PGDATA)


# A shell starts a background job (`make test &`, a script's `cmd &`) with SIGINT ignored, and every
# process it starts inherits that: the Ctrl-C tests' runs would then never see their Ctrl-C and run to the
# end. A handler of our own is reset to the default in each child, as a terminal's foreground job has it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

SERVER_TOKEN = "test-token-3f9c1a7e5b"


@pytest.fixture(scope="session")
async def local_server() -> AsyncIterator[LocalServer]:
    """One local server per test process, for every folder's trials (harness, scorers): a start costs
    about 1.5 CPU-seconds, most of it importing the MCP SDK."""
    server = LocalServer(token=SERVER_TOKEN)
    await server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def endpoints(local_server: LocalServer) -> ServerEndpoints:
    assert local_server.endpoints is not None
    return local_server.endpoints


@pytest.fixture(autouse=True)
def _fresh_settings() -> Iterator[None]:
    """Each test's settings are read from the environment it sets: a run reads it once
    (`harness.environment.process_env`), a test process runs many tests that set it their own way."""
    forget_process_env()
    yield
    forget_process_env()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each process releases the clusters of its own worker once its tests (and their fixtures) are
    done: the last live user of a cluster stops it, so a second `pytest` in the same checkout keeps
    the cluster it is still using.

    The xdist controller runs no tests and has no clusters: it must not stop the unsuffixed ones,
    which a plain `pytest` beside it may be using. `LOCALNEON_KEEP=1` keeps them for the next run.
    """
    is_xdist_controller = not hasattr(session.config, "workerinput") and bool(
        getattr(session.config.option, "numprocesses", None)
    )
    if is_xdist_controller or os.environ.get("LOCALNEON_KEEP") == "1" or "DATABASE_URL" in os.environ:
        return
    for pgdata in (TEST_PGDATA, SCORER_PGDATA, FAULTS_PGDATA):
        release(pgdata, os.getpid())


def runs_the_cli(item: pytest.Item) -> bool:
    """Whether `item`'s file runs whole evals in subprocesses (the fault tests, or a file using the CLI helpers)."""
    module = getattr(item, "module", None)
    if module is None:
        return False
    if module.__name__.startswith("tests.faults."):
        return True
    return any(getattr(value, "__module__", None) == "tests.evals.cli" for value in vars(module).values())


# What the fast lane (`make check`, `pytest --fast`) leaves out besides whole evals: the npm packages
# (Neon's, and DBHub, whose family starts it for every trial).
_NPM_MODULES = (
    "harness.servers.neon.published",
    "harness.servers.neon.stdio",
    "harness.servers.dbhub",
    "tests.localneon.npm_packages",
)


def needs_npm(item: pytest.Item) -> bool:
    """Whether `item`'s file drives Neon's npm packages (a Node process per test, minutes to install)."""
    module = getattr(item, "module", None)
    if module is None:
        return False
    return any(str(getattr(value, "__module__", "")).startswith(_NPM_MODULES) for value in vars(module).values())


# The longest files that stay in the fast lane (20-40 s each on 2 cores; `pytest --durations=0`):
# handed out right after the whole-eval files, instead of being among the last collected and
# running alone at the end of `make check`.
_LONG_FAST_FILES = (
    "tests/analysis/test_attribution.py",
    "tests/localneon/test_hostile_sql.py",
    "tests/scorers/test_control_separation.py",
    "tests/test_docs.py",
    "tests/harness/test_pool_and_janitor.py",
    "tests/harness/test_trials.py",
)


# The longest whole-eval files of `make test` (`--durations` on 2 cores, 2026-12-04: 30-45 s each),
# handed out before the other whole-eval files: collected last (tests/validity/), the lab's fast slice
# would otherwise start when the workers have little left to share.
_LONG_CLI_FILES = (
    "tests/validity/test_lab_fast.py",
    "tests/evals/test_dataset_sync.py",
    "tests/evals/test_cli_hostile_model.py",
    "tests/evals/test_sharding.py",
)


def hand_out_order(item: pytest.Item) -> tuple[bool, int]:
    """Whole-eval files first (the longest of them first), then the fast lane's longest files, then the
    rest (a stable sort key)."""
    path = item.nodeid.partition("::")[0]
    longest = _LONG_CLI_FILES if runs_the_cli(item) else _LONG_FAST_FILES
    rank = longest.index(path) if path in longest else len(longest)
    return not runs_the_cli(item), rank


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="the fast lane: leave out whole evals in subprocesses, fault injection and Neon's npm packages",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files that run whole evals first, the fast lane's longest next, the quick ones after.

    `make test` hands whole files to its workers in this order, so the minutes-long files start at
    once and the many short ones fill the workers' last minutes, instead of one long file running
    alone at the end. The sort is stable and depends only on the code, so every worker collects the
    same order (pytest-xdist requires it).
    """
    if config.getoption("--fast"):
        slow = [item for item in items if runs_the_cli(item) or needs_npm(item)]
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item not in slow]
    items.sort(key=hand_out_order)
