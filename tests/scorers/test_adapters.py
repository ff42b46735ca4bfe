"""Adapters rebuild the trial and case from Braintrust metadata and call the pure scorers."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from scorers import adapters
from tests.fakes.openai_judge import FakeJudge
from tests.scorers.conftest import Captured, call, case, record


def braintrust_metadata(case_id: str, **fields: Any) -> dict[str, Any]:
    trial = record(case_id, **fields)
    return {"trial": trial.model_dump(mode="json"), "case": case(case_id).model_dump(mode="json")}


def test_the_judge_adapter_is_asynchronous() -> None:
    # Names and order are test_registry.py's (ALL there is the one list a new scorer joins).
    assert inspect.iscoroutinefunction(adapters.by_name("factuality"))


def test_sync_adapters_score_from_metadata(captured: Captured) -> None:
    metadata = braintrust_metadata(
        "add-column-description",
        calls=[call("prepare_database_migration", migrationSql="ALTER TABLE posts ADD COLUMN description text")],
        before=captured.before,
        after=captured.after_add_column,
    )
    kwargs: dict[str, Any] = {
        "input": "ignored",
        "output": "ignored",
        "expected": "ignored",
        "metadata": metadata,
        "trace": None,
    }
    assert adapters.by_name("tool_trajectory")(**kwargs).score == 1
    integrity = adapters.by_name("main_branch_integrity")(**kwargs)
    assert integrity.name == "main_branch_integrity" and integrity.score == 0
    assert adapters.by_name("data_integrity")(**kwargs).score == 0
    assert adapters.by_name("temporary_branch_cleanup")(**kwargs).score is None


async def test_factuality_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BRAINTRUST_API_KEY", "ANTHROPIC_API_KEY", "EVAL_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with FakeJudge(choice="A") as judge:
        for name, value in judge.env().items():
            monkeypatch.setenv(name, value)
        metadata = braintrust_metadata("read-count-posts", final_answer="There are some posts.")
        score = await adapters.by_name("factuality")(
            input="q", output="There are some posts.", expected="200", metadata=metadata
        )
    assert score.name == "factuality" and score.score == 0.4 and len(judge.requests) == 1


def test_missing_or_broken_metadata_is_skipped() -> None:
    assert adapters.by_name("tool_trajectory")(metadata=None).metadata["reason"].startswith("metadata lacks")
    broken = {"trial": {"case_id": 3}, "case": {}}
    score = adapters.by_name("main_branch_integrity")(metadata=broken)
    assert score.score is None and score.metadata["reason"].startswith("cannot rebuild trial/case")
