"""The overhead benchmark runs and reports every phase (numbers are printed, never asserted)."""

from __future__ import annotations

import pytest

from harness.bench import main


def test_bench_prints_phases_for_both_batches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--trials", "3", "--concurrency", "2"]) == 0
    output = capsys.readouterr().out
    assert "3 trials, sequential" in output and "3 trials, concurrency 2" in output
    for phase in ("sandbox_open", "capture_before", "agent", "capture_after", "sandbox_close", "total"):
        assert output.count(f"  {phase} ") == 2, phase
    assert "not ok" not in output
