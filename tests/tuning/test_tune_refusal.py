"""`make tune` with a model proposer whose route refuses: the refusal is the run's first problem."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.evals.cli import offline_env, python_module, run_in_repo
from tests.tuning.test_model_proposer import SECRET, StandIn


@pytest.fixture
def refusing() -> Iterator[StandIn]:
    stand_in = StandIn(status=401)
    stand_in.server.start()
    yield stand_in
    stand_in.server.stop()


def test_make_tune_with_a_refusing_proposer_stops_before_any_trial(refusing: StandIn, tmp_path: Path) -> None:
    """Through the real CLI: the route's refusal is the run's first problem, not one met after the train run."""
    results = tmp_path / "results"
    env = offline_env(results, EVAL_MODEL="control:lexical", **refusing.env(EVAL_TUNE_PROVIDER="openai"))
    done = run_in_repo(python_module("tuning", "--max-candidates", "1"), env, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "tune: stopping before any trial" in done.stderr and "HTTP 401" in done.stderr
    assert SECRET not in done.stderr + done.stdout
    assert not any(path.name.endswith("-train") for path in results.glob("*"))  # no trial ran
