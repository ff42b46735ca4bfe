"""The benchmark prints its three ratios with their targets (numbers are printed, never asserted)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from harness.measure.bench import filesystem_of, main
from harness.run.liveness import pgdata_dir


@pytest.mark.long  # runs `make bench` itself, a minute and more of timed trials
def test_bench_prints_the_three_ratios_with_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--trials", "2", "--concurrency", "2", "--delay", "0.01", "--memory-trials", "5"]) == 0
    output = capsys.readouterr().out
    for phase in ("sandbox_open", "capture_before", "agent", "capture_after", "sandbox_close", "total"):
        assert f"  {phase} " in output, phase
    assert re.search(r"overhead ratio: \d+\.\d\d .*target <= 1\.5: (met|NOT MET)", output), output
    assert re.search(r"concurrency speedup: \d+\.\d\d .*target >= 6\.0: (met|NOT MET)", output), output
    assert re.search(r"ceiling on this machine: (\d+\.\d\d|inf) \(\d+ cores", output), output
    # Who spent the CPU: the harness itself, the local server it started, that server's PostgreSQL.
    splits = re.findall(
        r"CPU-s per trial by process: harness (\S+) \(\d+%\) \+ server (\S+) \(\d+%\) "
        r"\+ postgres (\S+) \(\d+%\) \+ other (\S+)",
        output,
    )
    assert len(splits) == 2, output
    assert all(float(postgres) > 0 and float(harness) > 0 for harness, _, postgres, _ in splits), splits
    assert re.search(r"memory: \d+\.\d\d .*target <= 1\.1: (met|NOT MET)", output), output
    assert "not ok" not in output
    if "DATABASE_URL" not in os.environ:  # the figures depend on where the clusters' files are
        assert f"PostgreSQL data directory: {pgdata_dir()} ({filesystem_of(pgdata_dir())})" in output, output


@pytest.mark.skipif(not Path("/proc/mounts").exists(), reason="reads /proc/mounts (Linux)")
def test_the_filesystem_is_that_of_the_longest_mount_point() -> None:
    assert filesystem_of(Path("/proc/self/status")) == "proc"  # inside /proc, not the root filesystem
    root = next(line.split()[2] for line in Path("/proc/mounts").read_text().splitlines() if line.split()[1] == "/")
    assert filesystem_of(Path("/")) == root
