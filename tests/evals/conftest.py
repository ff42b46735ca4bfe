"""Each test of the evals' wiring starts a run of its own: what one test's experiments, scores and
reports leave in the process's run (`braintrust_run.run_state`) must not reach the next."""

from __future__ import annotations

import pytest

from braintrust_run.run_state import Run, new_run


@pytest.fixture(autouse=True)
def fresh_run() -> Run:
    return new_run()
