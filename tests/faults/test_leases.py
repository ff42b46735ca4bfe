"""The cluster's leases, with real processes: the last live user out stops it, a killed user's lease
does not count, LOCALNEON_KEEP=1 and `pg start` keep it, a removed cluster leaves no lock file, and a
stop left under way by a killed process is finished by the next release or start."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from harness.mcp.server_process import LocalServer
from localneon.cluster import leases
from localneon.cluster.pg import live_postmaster, release, remove_cluster, start_embedded
from tests.evals.cli import REPO_ROOT, python_module, run_in_repo
from tests.faults.conftest import own_cluster_dir

HOLD = "import sys, time; from pathlib import Path; from localneon.cluster.pg import start_embedded\n"
HOLD += "start_embedded(Path(sys.argv[1])); print('up', flush=True); time.sleep(float(sys.argv[2]))"

pytestmark = pytest.mark.skipif("DATABASE_URL" in os.environ, reason="the clusters are embedded ones")


def running(pgdata: Path) -> bool:
    return (pgdata / "postmaster.pid").exists()


@pytest.fixture
def users() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def user(pgdata: Path, users: list[subprocess.Popen[str]], seconds: float = 600, **env: str) -> subprocess.Popen[str]:
    """A process that opens the cluster (taking its lease) and then stays `seconds`."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(pgdata), str(seconds)],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        text=True,
    )
    users.append(process)
    assert process.stdout is not None and process.stdout.readline().strip() == "up"
    return process


def test_the_last_live_user_stops_the_cluster_and_a_killed_one_does_not_count(
    request: pytest.FixtureRequest, users: list[subprocess.Popen[str]]
) -> None:
    pgdata = own_cluster_dir(request, f"leases-{secrets.token_hex(3)}")
    first, second = user(pgdata, users), user(pgdata, users)
    assert release(pgdata) is False and running(pgdata), "stopped under two live users"
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert release(pgdata) is False and running(pgdata), "stopped under the second user"
    second.send_signal(signal.SIGKILL)  # no user is left, and none could say so
    second.wait(10)
    assert release(pgdata) is True and not running(pgdata)

    last = user(pgdata, users, seconds=0)  # ends normally: it stops the cluster itself
    last.wait(60)
    assert last.returncode == 0 and not running(pgdata)


def test_keep_and_pg_start_keep_the_cluster_running(
    request: pytest.FixtureRequest, users: list[subprocess.Popen[str]]
) -> None:
    pgdata = own_cluster_dir(request, f"leases-{secrets.token_hex(3)}")
    kept = user(pgdata, users, seconds=0, LOCALNEON_KEEP="1")
    kept.wait(60)
    assert running(pgdata), "LOCALNEON_KEEP=1 asked to keep it"
    assert release(pgdata) is True and not running(pgdata)  # a later release without KEEP stops it

    env = {**os.environ, "LOCALNEON_PGDATA": str(pgdata)}
    started = run_in_repo(python_module("localneon.pg", "start"), env)
    assert started.returncode == 0, started.stderr
    user(pgdata, users, seconds=0).wait(60)
    assert running(pgdata), "started by hand: it runs until `pg stop`"
    released = run_in_repo(python_module("localneon.pg", "release"), env)
    assert released.returncode == 0 and running(pgdata), released.stdout
    assert run_in_repo(python_module("localneon.pg", "stop"), env).returncode == 0
    assert not running(pgdata)


def test_one_release_takes_every_test_cluster_and_spares_the_kept_one(
    request: pytest.FixtureRequest, users: list[subprocess.Popen[str]]
) -> None:
    """`make` releases all its test clusters in one process (one each cost a second of imports)."""
    orphaned, live, kept = (own_cluster_dir(request, f"leases-{name}-{secrets.token_hex(3)}") for name in "olk")
    holder = user(orphaned, users)
    holder.send_signal(signal.SIGKILL)  # its lease stops counting; the cluster runs on
    holder.wait(10)
    user(live, users)
    by_hand = run_in_repo(python_module("localneon.pg", "start"), {**os.environ, "LOCALNEON_PGDATA": str(kept)})
    assert by_hand.returncode == 0, by_hand.stderr
    never = orphaned.parent / "never made"
    released = run_in_repo(python_module("localneon.pg", "release", str(orphaned), str(never), str(live), str(kept)))
    assert released.returncode == 0, released.stderr
    assert not running(orphaned) and running(live) and running(kept)
    assert f"stopped {orphaned}" in released.stdout and f"not running: {never}" in released.stdout
    assert f"left running: {live}" in released.stdout and f"left running: {kept}" in released.stdout
    stopped = run_in_repo(python_module("localneon.pg", "stop", str(live), str(kept)))
    assert stopped.returncode == 0 and not running(live) and not running(kept), stopped.stderr


def test_a_removed_cluster_leaves_no_lock_file_or_leases_beside_it(users: list[subprocess.Popen[str]]) -> None:
    pgdata = REPO_ROOT / ".localneon" / f"removed-{secrets.token_hex(3)}"
    try:
        holder = user(pgdata, users)
        beside = sorted(path.name for path in pgdata.parent.glob(f".{pgdata.name}.*"))
        assert beside == [f".{pgdata.name}.leases", f".{pgdata.name}.lock"]
        holder.kill()
        holder.wait(10)
    finally:
        remove_cluster(pgdata)
    assert not pgdata.exists() and list(pgdata.parent.glob(f".{pgdata.name}.*")) == []


def test_a_local_server_ended_by_sigterm_stops_the_cluster_it_was_the_last_user_of(
    request: pytest.FixtureRequest, users: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    pgdata = own_cluster_dir(request, f"sigterm-{secrets.token_hex(3)}")
    ready = tmp_path / "ready.json"
    server = subprocess.Popen(
        [*python_module("localneon", "--transport=http", "--port=0", f"--ready-file={ready}")],
        cwd=REPO_ROOT,
        env={**os.environ, "LOCALNEON_PGDATA": str(pgdata)},
        stderr=subprocess.PIPE,
        text=True,
    )
    users.append(server)
    assert server.stderr is not None
    first = server.stderr.readline()  # a new data directory's first start says so before it serves
    assert "localneon: first start: creating the embedded PostgreSQL cluster" in first, first
    assert "serving" in server.stderr.readline()
    assert running(pgdata)
    server.send_signal(signal.SIGTERM)
    assert server.wait(60) == 128 + signal.SIGTERM  # the signal's documented code, not a clean 0
    assert not running(pgdata), "the cluster outlived its last user"


def test_the_first_start_of_a_cluster_says_so_on_the_runs_console_and_later_starts_do_not(
    request: pytest.FixtureRequest, capfd: pytest.CaptureFixture[str]
) -> None:
    """The harness's server's stderr goes to a file; only the first start's line reaches the console."""
    pgdata = own_cluster_dir(request, f"first-start-{secrets.token_hex(3)}")
    for _ in range(2):
        server = LocalServer(env={"LOCALNEON_PGDATA": str(pgdata)})
        try:
            server.start_blocking()
        finally:
            server.stop()
    shown = capfd.readouterr().err
    assert shown.count("localneon: first start: creating the embedded PostgreSQL cluster in") == 1, shown
    assert str(pgdata) in shown and "serving" not in shown


def test_a_first_start_killed_in_initdb_leaves_nothing_that_stops_the_next_one(
    request: pytest.FixtureRequest, users: list[subprocess.Popen[str]]
) -> None:
    """initdb runs beside the data directory and is renamed into place: killed half-way, the data
    directory is absent (not half made) and the next start creates the cluster; a folder holding
    files but no cluster is refused with a line naming it, never handed to initdb."""
    pgdata = own_cluster_dir(request, f"killed-initdb-{secrets.token_hex(3)}")
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(pgdata), "600"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its group holds initdb and what initdb starts: all killed at once
    )
    users.append(first)
    while not any((folder / "PG_VERSION").exists() for folder in pgdata.parent.glob(f".{pgdata.name}.initdb-*")):
        assert first.poll() is None and not running(pgdata), "the first start ended before initdb wrote anything"
        time.sleep(0.01)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    assert not (pgdata / "PG_VERSION").exists()

    second = user(pgdata, users)  # creates the cluster afresh
    assert running(pgdata) and list(pgdata.parent.glob(f".{pgdata.name}.initdb-*")) == []
    second.kill()
    second.wait(10)
    release(pgdata)

    remove_cluster(pgdata)
    pgdata.mkdir(parents=True)
    (pgdata / "notes.txt").write_text("mine", encoding="utf-8")
    refused = run_in_repo([*python_module("localneon.pg", "start")], {**os.environ, "LOCALNEON_PGDATA": str(pgdata)})
    assert refused.returncode != 0 and "holds files but no PostgreSQL cluster" in refused.stderr, refused.stderr
    assert (pgdata / "notes.txt").read_text(encoding="utf-8") == "mine"  # nothing of the user's removed


def left_stopping(pgdata: Path) -> tuple[psycopg.Connection[tuple[object, ...]], int]:
    """A cluster caught half way through a stop, with nobody holding its lock: what the last user's
    stop leaves when that user is SIGKILLed while its `pg_ctl stop` goes on. A smart shutdown (SIGTERM
    to the postmaster) holds it there for as long as a session stays open; the session is returned."""
    cluster = start_embedded(pgdata, lease=False)
    session = psycopg.connect(cluster.conninfo("postgres"), autocommit=True)
    postmaster = live_postmaster(pgdata)
    assert postmaster is not None and postmaster.status == "ready"
    os.kill(postmaster.pid, signal.SIGTERM)
    while (info := live_postmaster(pgdata)) is None or info.status != "stopping":
        assert info is not None, "the smart shutdown ended with a session open"
        time.sleep(0.01)
    return session, postmaster.pid


def test_a_release_that_finds_a_stop_under_way_finishes_it(request: pytest.FixtureRequest) -> None:
    """A release that found the server stopping took it for stopped and returned: the last `make`
    release of two runs then left a PostgreSQL running. Now it stops it to the end, and says so."""
    pgdata = own_cluster_dir(request, f"stopping-{secrets.token_hex(3)}")
    session, pid = left_stopping(pgdata)
    with session:
        released = run_in_repo(python_module("localneon.pg", "release", str(pgdata)))
        assert released.returncode == 0 and released.stdout.strip() == f"stopped {pgdata}", released
        assert live_postmaster(pgdata) is None and not running(pgdata)
        assert leases.started_at(pid) is None, "the postmaster outlived the release"
        again = run_in_repo(python_module("localneon.pg", "release", str(pgdata)))  # idempotent
        assert again.returncode == 0 and again.stdout.strip() == f"not running: {pgdata}", again


def test_a_start_that_finds_a_stop_under_way_waits_it_out(
    request: pytest.FixtureRequest, users: list[subprocess.Popen[str]]
) -> None:
    """A run starting just then failed ("lock file postmaster.pid already exists"); now its start
    stops the server to the end and starts it afresh."""
    pgdata = own_cluster_dir(request, f"stopping-{secrets.token_hex(3)}")
    session, pid = left_stopping(pgdata)
    with session:
        later = user(pgdata, users)  # opens the cluster: "up" once it is started and ready
        postmaster = live_postmaster(pgdata)
        assert postmaster is not None and postmaster.status == "ready" and postmaster.pid != pid
    later.kill()
    later.wait(10)
    assert release(pgdata) is True and live_postmaster(pgdata) is None
