"""The disk under the local server's PostgreSQL fills up mid-run: the record and the console say so.

The fault is real: the run's cluster lives on a small tmpfs of its own (a mount only root may make;
the test is skipped elsewhere, saying why), and while the first trial's model answers, another
process (this test) fills that filesystem. PostgreSQL's own errors need not mention the disk (a
failed WAL write is a PANIC, and later connections meet a server in crash recovery), so each
failed trial's error must begin with the cause in words, and the console must say it too.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.recording.store import TRIALS_FILE, load_run
from tests.evals.cli import offline_env, python_module, run_cli, run_in_repo
from tests.fakes.anthropic_server import FakeAnthropic, first_user_text, reply, text
from tests.pgdirs import cluster_dir

API_KEY = "fake-anthropic-full-disk-0123456789"
DISK_MB = 300
CASES = textwrap.dedent(
    """
    version: 1
    cases:
    """
) + "".join(
    f"""  - id: full-disk-{index}
    scenario: tool_selection
    fixture: blog
    input: "[{index}] How many posts are there in my {{project_id}} project?"
    reference_calls: [{{tool: run_sql, arguments: {{sql: "SELECT count(*) FROM posts"}}}}]
    expected_answer: "There are 200 posts."
"""
    for index in (1, 2, 3)
)


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 300 MB tmpfs for the run's cluster, beside the tests' other clusters (not in pytest's own
    temporary folders, which pytest makes private while the server, another user when we are root,
    still needs to reach its data directory); unmounted (its cluster stopped first) afterwards."""
    mount = cluster_dir("full-disk")
    mount.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0777", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"a small filesystem for the cluster needs `mount -t tmpfs` (root): {made.stderr.strip()}")
    try:
        yield mount
    finally:
        pgdata = mount / "pgdata"
        (mount / "filler").unlink(missing_ok=True)  # room again, so the server can recover and stop
        run_in_repo(python_module("localneon.pg", "stop", str(pgdata)), timeout=120)
        with contextlib.suppress(OSError, ValueError):  # a server that would not stop: the one this test started
            os.kill(int((pgdata / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
            time.sleep(1)
        subprocess.run(["umount", str(mount)], check=False)
        with contextlib.suppress(OSError):
            mount.rmdir()


def fill(folder: Path) -> int:
    """Write one file into ``folder`` until its filesystem refuses more; the bytes written."""
    written = 0
    chunk = b"\0" * (1024 * 1024)
    with (folder / "filler").open("wb") as handle:
        try:
            while True:
                handle.write(chunk)
                handle.flush()
                written += len(chunk)
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    return written


@pytest.mark.long
def test_a_full_disk_under_the_cluster_is_named_in_the_records_and_on_the_console(
    tmp_path: Path, small_disk: Path
) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(CASES)
    results = tmp_path / "results"
    filled: list[int] = []

    def model(body: dict[str, Any]) -> dict[str, Any]:
        """Answers at once; while the first trial's model answers, the disk fills (from outside the run)."""
        if first_user_text(body).startswith("[1]") and not filled:
            filled.append(fill(small_disk))
        return reply(text("There are 200 posts."))

    def make_room_once_recorded(stop: threading.Event) -> None:
        """Free the disk once every trial is on record, so the run's cleanup and the server's stop can end."""
        while not stop.is_set():
            trials = list(results.glob(f"*/{TRIALS_FILE}"))
            if trials and len(trials[0].read_text().splitlines()) >= 3:
                (small_disk / "filler").unlink(missing_ok=True)
                return
            time.sleep(0.2)

    stop = threading.Event()
    watcher = threading.Thread(target=make_room_once_recorded, args=(stop,), daemon=True)
    with FakeAnthropic(model) as fake:
        env = offline_env(
            results,
            LOCALNEON_PGDATA=str(small_disk / "pgdata"),
            EVAL_MODEL="anthropic:claude-sonnet-4-6",
            ANTHROPIC_API_KEY=API_KEY,
            ANTHROPIC_BASE_URL=fake.url,
            EVAL_DATASET=str(dataset),
            EVAL_CONCURRENCY="1",
            EVAL_LOCAL_POOL="off",
            EVAL_TRIAL_TIMEOUT="60",
            EVAL_CAPTURE_TIMEOUT="30",
        )
        watcher.start()
        try:
            completed = run_cli(env, "evals/eval_tool_selection.py", timeout=600)
        finally:
            stop.set()
            watcher.join(5)
    server_log = small_disk / "pgdata" / "log"
    log = completed.stdout[-4000:] + completed.stderr[-6000:]
    log += "\nPostgreSQL's log:\n" + (server_log.read_text(errors="replace")[-3000:] if server_log.exists() else "none")
    assert filled and filled[0] > 0, log
    [run] = list(results.iterdir())
    _, records = load_run(run)
    failed = [record for record in records if record.outcome == "infra_error"]
    print(f"\nfilled {filled[0] // 1024 // 1024} MB; outcomes: {[r.outcome for r in records]}")
    for record in failed:
        print(f"  {record.case_id}: {(record.error or '')[:300]}")
    assert failed, log  # the trials after the disk filled could not open a sandbox
    assert {r.case_id for r in failed} >= {"full-disk-2", "full-disk-3"}, [(r.case_id, r.outcome) for r in records]
    for record in failed:
        assert (record.error or "").startswith("the database server's disk is full ("), record.error
        assert str(small_disk / "pgdata") in (record.error or "")
    assert "harness: the database server's disk is full" in completed.stderr, log
    summary = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith('{"experiment"')]
    console = completed.stdout + completed.stderr
    assert summary or "disk is full" in console, log
    assert completed.returncode != 0, log  # every trial past the fault is an infrastructure error
    shutil.rmtree(results, ignore_errors=True)
