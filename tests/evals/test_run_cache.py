"""The run's prompt-cache line: counted over every experiment's trials, printed once per run."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from braintrust_run import report as run_report


def trial(read: int, written: int, uncached: int, view: str) -> SimpleNamespace:
    usage = {"input_tokens": uncached, "cache_read_input_tokens": read, "cache_creation_input_tokens": written}
    metadata = {"case_id": "c", "outcome": "ok", "cost_usd": 0.0, "usage": usage, "tool_view_hash": view}
    return SimpleNamespace(input="q", metadata=metadata, scores={}, error=None)


def experiment(name: str, results: list[SimpleNamespace], jsonl: bool) -> Any:
    evaluator = SimpleNamespace(experiment_name=name, eval_name=name, metadata={"tool_count": 3})
    summary = SimpleNamespace(as_dict=lambda: {})
    return run_report.report_eval(evaluator, SimpleNamespace(results=results, summary=summary), False, jsonl)


def test_the_run_line_sums_every_experiment_and_counts_tool_lists(capsys: pytest.CaptureFixture[str]) -> None:
    first = experiment("a", [trial(0, 700, 100, "h1"), trial(700, 0, 100, "h1")], True)
    second = experiment("b", [trial(0, 700, 100, "h2")], True)
    capsys.readouterr()
    assert run_report.report_run([first, second], False, True) is True
    [line] = [json.loads(text) for text in capsys.readouterr().out.splitlines() if text.startswith('{"run"')]
    assert line["run"]["cache"] == {
        "cache_read_share": round(700 / 2400, 4),
        "input_tokens": 2400,
        "cache_read_input_tokens": 700,
        "cache_creation_input_tokens": 1400,
        "trials": 3,
        "tool_views": 2,
    }
    assert run_report.report_run([], False, True) is True  # the next run starts from nothing
    assert '"trials": 0' in capsys.readouterr().out


def test_the_run_line_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    made = experiment("a", [trial(0, 7000, 500, "h"), trial(7000, 0, 500, "h")], False)
    capsys.readouterr()
    run_report.report_run([made], False, False)
    out = capsys.readouterr().out
    assert (
        "run: prompt cache read 46.7% of 15,000 input tokens (7,000 read, 7,000 written) over 2 trial(s) "
        "with 1 distinct tool list(s)"
    ) in out
    run_report.report_run([], False, False)
    assert "prompt cache" not in capsys.readouterr().out  # no model ran: the line would mean nothing
    assert run_report.render_run_cache(run_report.run_cache([])).startswith("run: prompt cache read no input tokens")
