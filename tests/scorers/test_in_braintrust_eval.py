"""The adapters inside a real (offline) Braintrust Eval: skipped scores are logged as None with their
reason, the async judge runs on Eval's event loop, and no scorer raises (which Braintrust would hide).
"""

from __future__ import annotations

from typing import Any

import pytest
from braintrust import Eval, EvalCase

from scorers import adapters, registry
from tests.fakes.openai_judge import FakeJudge
from tests.scorers.conftest import call, case, record

# The scores whose verdict on this record the test knows; a new scorer is checked in its own tests.
KNOWN = ("main_branch_integrity", "data_integrity", "tool_trajectory", "temporary_branch_cleanup", "factuality")


def test_adapters_score_inside_eval(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("BRAINTRUST_API_KEY", "ANTHROPIC_API_KEY", "EVAL_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    bundled = case("add-column-description")
    trial = record(
        bundled.id,
        [call("prepare_database_migration", migrationSql=bundled.reference_sql)],
        final_answer="Staged on a temporary branch; apply to main?",
    )

    def task(input: Any, hooks: Any) -> str:
        hooks.metadata["trial"] = trial.model_dump(mode="json")
        hooks.metadata["case"] = bundled.model_dump(mode="json")
        return trial.final_answer

    with FakeJudge(choice="B") as judge:
        for name, value in judge.env().items():
            monkeypatch.setenv(name, value)
        result = Eval(
            "scorer-adapters",
            data=[EvalCase(input=trial.input, expected=bundled.expected_answer)],
            task=task,
            scores=adapters.SCORERS,
            no_send_logs=True,
        )
    (row,) = result.results
    assert set(row.scores) == set(registry.NAMES)  # every registered score, a new one included
    assert {name: row.scores[name] for name in KNOWN} == {
        "main_branch_integrity": None,  # no snapshots in this record
        "data_integrity": None,
        "tool_trajectory": 1,
        "temporary_branch_cleanup": None,
        "factuality": 0.8,
    }
    metadata: Any = row.metadata or {}
    assert "scorer_errors" not in metadata and len(judge.requests) == 1
    capsys.readouterr()
