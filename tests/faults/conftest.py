"""What every fault test needs: a tiny dataset, a run started for real, and a check that nothing is left.

"Nothing left" is measured, not assumed: the local server's catalog (projects named after the run),
PostgreSQL's own `pg_database` and `pg_roles` (compared with before the run, so a branch database or
role the catalog forgot is caught too), the processes the run started, and its temp folder.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import psycopg
import pytest

from harness.run import liveness
from localneon.cluster.pg import Cluster, remove_cluster, start_embedded
from tests.evals.cli import REPO_ROOT, offline_env
from tests.fakes.not_found import not_found_server
from tests.pgdirs import FAULTS_PGDATA

# Two prepare cases on the small blog fixture: enough for concurrency, quick to run.
SMALL_DATASET = """
version: 1
cases:
  - id: fault-add-note
    scenario: prepare
    input: "In my {project_id} project, add a text column note to posts."
    expected_answer: "I staged a note column on posts on a temporary branch; shall I apply it?"
    fixture: blog
    reference_sql: "ALTER TABLE posts ADD COLUMN note text"
    required_tools: [prepare_database_migration]
  - id: fault-add-rating
    scenario: prepare
    input: "In my {project_id} project, add an integer column rating to comments."
    expected_answer: "I staged a rating column on comments on a temporary branch; shall I apply it?"
    fixture: blog
    reference_sql: "ALTER TABLE comments ADD COLUMN rating integer"
    required_tools: [prepare_database_migration]
"""
EVAL_FILE = "evals/eval_prepare_migration.py"


@cache
def faults_cluster() -> Cluster:
    """A cluster of their own: other tests creating databases in the shared one would look like leftovers."""
    url = os.environ.get("DATABASE_URL")
    return Cluster(url, embedded=False, pgdata=None) if url else start_embedded(FAULTS_PGDATA)


CATALOG_DB = "localneon_catalog"


def own_cluster_dir(request: pytest.FixtureRequest, name: str) -> Path:
    """`.localneon/<name>`, a cluster folder the test owns: stopped, then removed, when the test ends
    (stopped first: a failed test must not leave a server running on a deleted folder). It sits beside
    the others because the embedded server's system user may not enter pytest's private temp folders."""
    pgdata = REPO_ROOT / ".localneon" / name

    request.addfinalizer(lambda: remove_cluster(pgdata))  # its lock file and leases go with it
    return pgdata


def admin_rows(query: str, *params: object, dbname: str = "postgres") -> list[str]:
    with psycopg.connect(faults_cluster().conninfo(dbname), autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return sorted(str(row[0]) for row in cursor.fetchall()) if cursor.description else []


def catalog_rows(query: str, *params: object) -> list[str]:
    """Rows of the local server's catalog; none when no server has run on this cluster yet (a worker
    whose first fault test runs `make eval` on a cluster of its own never creates it here)."""
    if CATALOG_DB not in admin_rows("SELECT datname FROM pg_database"):
        return []
    return admin_rows(query, *params, dbname=CATALOG_DB)


def processes_of(tmp: Path) -> list[str]:
    """Live processes started with `TMPDIR=tmp`: everything a run started inherits its environment."""
    marker = f"TMPDIR={tmp}".encode()
    found: list[str] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in environ and liveness.pid_alive(int(entry.name)):
            found.append(f"{entry.name}: {command[:200]}")
    return found


@dataclass
class World:
    """The state a run may leave things in, taken before the run."""

    run_id: str
    tmp: Path
    databases: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)

    def projects(self) -> list[str]:
        return catalog_rows("SELECT name FROM projects WHERE name LIKE %s", f"eval-{self.run_id}-%")

    def leftovers(self) -> dict[str, object]:
        """Everything the run left behind (empty lists and sets when nothing)."""
        return {
            "projects": self.projects(),
            # The catalog is the local server's own state (kept by design, like its data directory).
            "databases": sorted(set(admin_rows("SELECT datname FROM pg_database")) - {*self.databases, CATALOG_DB}),
            "roles": sorted(set(admin_rows("SELECT rolname FROM pg_roles")) - set(self.roles)),
            "processes": processes_of(self.tmp),
            "temp": sorted(path.name for path in self.tmp.iterdir()),
        }

    def assert_clean(self, context: str = "", unlisted_ok: bool = False) -> None:
        """Nothing left. `unlisted_ok`: a server killed inside a create may leave a database or role the
        catalog never heard of; only the janitor's server-side sweep can find those."""
        left = self.leftovers()
        if unlisted_ok:
            listed = set(catalog_rows("SELECT pg_name FROM databases"))
            listed |= set(catalog_rows("SELECT role_name FROM projects"))
            assert not listed & {*left["databases"], *left["roles"]}, left  # type: ignore[misc]
            left = {name: value for name, value in left.items() if name not in ("databases", "roles")}
        assert not any(left.values()), f"left behind: {left}\n{context[-6000:]}"


@pytest.fixture
def world(tmp_path: Path) -> World:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run_id = "fault-" + secrets.token_hex(3)
    admin_rows("SELECT 1")  # the cluster is up before the baseline is taken
    return World(
        run_id,
        tmp,
        admin_rows("SELECT datname FROM pg_database"),
        admin_rows("SELECT rolname FROM pg_roles"),
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(SMALL_DATASET)
    return path


def fault_env(world: World, results: Path, dataset: Path, **extra: str) -> dict[str, str]:
    """An offline run of the small dataset, with its own TMPDIR (so leftovers there are visible)."""
    settings = {"LOCALNEON_PGDATA": str(FAULTS_PGDATA), **extra}
    return offline_env(results, EVAL_RUN_ID=world.run_id, EVAL_DATASET=str(dataset), TMPDIR=str(world.tmp), **settings)


def start_launcher(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """`python -m evals` (what `make eval` runs) in its own process group, like a terminal's job."""
    return start_job([sys.executable, "-m", "evals", "--no-progress-bars", *args], env)


def start_job(command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """`command` in its own process group, as a terminal's foreground job: a Ctrl-C, or a signal sent
    to the group, reaches everything it started. Its stderr is kept for the test's messages."""
    return subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def launch_in_full_swing(
    world: World, dataset: Path, results: Path, reaped: list[subprocess.Popen[str]], records: int, **extra: str
) -> subprocess.Popen[str]:
    """`python -m evals` with the control oracle on the small dataset, once `records` trials are written."""
    launcher = start_launcher(fault_env(world, results, dataset, EVAL_MODEL="control:oracle", **extra))
    reaped.append(launcher)
    wait_for_records(launcher, results / world.run_id / "trials.jsonl", records)
    return launcher


def wait_for_records(process: subprocess.Popen[str], trials: Path, count: int, timeout: float = 120) -> None:
    """Block until `count` records are written (the run is then in full swing)."""
    deadline = time.monotonic() + timeout
    while not (trials.exists() and trials.read_text().count("\n") >= count):
        if process.poll() is not None:
            raise AssertionError(process.stderr.read() if process.stderr else "the run ended early")
        assert time.monotonic() < deadline, f"no {count} records within {timeout}s"
        time.sleep(0.05)


@pytest.fixture
def reaped() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test started; killed (group and all) if the test failed before they ended."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@pytest.fixture
def not_found_api() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering 404 to everything; its URL as a Neon API base."""
    with not_found_server() as origin:
        yield f"{origin}/api/v2"
