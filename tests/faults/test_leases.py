"""The cluster's leases, with real processes: the last live user out stops it, a killed user's lease
does not count, LOCALNEON_KEEP=1 and `pg start` keep it, and a removed cluster leaves no lock file."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localneon.pg import release, remove_cluster
from tests.evals.cli import REPO_ROOT, python_module, run_in_repo
from tests.faults.conftest import own_cluster_dir

HOLD = "import sys, time; from pathlib import Path; from localneon.pg import start_embedded\n"
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
    assert server.stderr is not None and "serving" in server.stderr.readline()
    assert running(pgdata)
    server.send_signal(signal.SIGTERM)
    assert server.wait(60) == 128 + signal.SIGTERM  # the signal's documented code, not a clean 0
    assert not running(pgdata), "the cluster outlived its last user"
