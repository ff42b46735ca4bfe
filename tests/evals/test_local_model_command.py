"""The README's local-model command runs as written (issue 29): `EVAL_MODEL=openai:<name>
OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=local make eval`.

It used to stop at start: with only OPENAI_BASE_URL set the judge's route was the model's own server,
which the preflight refuses (a model judging its own answers). Now that route is passed over and the
first lines say so; and a model in no price table with a placeholder key gets the small trial count
(it got 20 trials a case, days of a CPU), said right after the surface line. The model's answers are recorded
llama-server ones (tests/fakes/llama_replay.py); the launcher, the CLI, the local server and
PostgreSQL are real.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from braintrust_run.doors import local_models
from harness.recording.store import load_run
from scorers.judge_client import judge_settings, no_judge_reason
from tests.evals.cli import offline_env, run_in_repo
from tests.fakes.llama_replay import LlamaReplay, answer
from tests.faults.conftest import SMALL_DATASET

MODEL = "openai:smollm2-135m-instruct"


def prose_answer(body: Any) -> tuple[int, Any]:
    """A recorded llama-server reply, its text replaced by a plain answer that ends the trial (`stop`)."""
    status, recorded = answer("openai_length")
    recorded["choices"][0]["finish_reason"] = "stop"
    recorded["choices"][0]["message"]["content"] = "I staged the column on a temporary branch. Shall I apply it?"
    return status, recorded


@pytest.mark.long  # the README's command, whole; the test below checks what it decides
def test_the_readme_local_model_command_runs_with_no_judge_and_two_trials(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(SMALL_DATASET)
    env = offline_env(tmp_path / "results", EVAL_DATASET=str(dataset), EVAL_RUN_ID="local-model-command")
    for name in ("EVAL_JUDGE_PROVIDER", "EVAL_TRIALS"):  # the command as the README writes it sets neither
        env.pop(name)
    with LlamaReplay(chat=[prose_answer] * 20) as server:
        env.update(EVAL_MODEL=MODEL, OPENAI_BASE_URL=server.openai_url, OPENAI_API_KEY="local")
        done = run_in_repo([sys.executable, "-m", "evals", "--no-progress-bars"], env, timeout=600)
    stderr = done.stderr
    assert "stopping before any trial" not in stderr and "Traceback" not in stderr, stderr[-4000:]
    assert done.returncode in (0, 1), f"exit {done.returncode}:\n{stderr[-4000:]}"  # 1: the gate judged the model
    lines = stderr.splitlines()
    assert lines[0].startswith("evals: surface: "), lines[:3]  # first, whose words the tools wear
    assert lines[1] == (
        f"evals: {MODEL} is in no price table and OPENAI_API_KEY is a placeholder (a local model): "
        "2 trials a case (set EVAL_TRIALS for more)"
    ), lines[:3]
    judge = next(line for line in lines if line.startswith("evals: factuality"))
    assert judge.startswith("evals: factuality is n/a: no judge: the judge route openai (http://127.0.0.1:"), judge
    assert f"is the endpoint of the model under test {MODEL}" in judge and "EVAL_JUDGE_PROVIDER" in judge, judge
    assert "set BRAINTRUST_API_KEY" not in stderr  # not the advice for a run with nothing configured
    _, records = load_run(tmp_path / "results" / "local-model-command")
    assert sorted((r.case_id, r.trial_index) for r in records) == [
        ("fault-add-note", 0),
        ("fault-add-note", 1),
        ("fault-add-rating", 0),
        ("fault-add-rating", 1),
    ]
    assert all(r.outcome == "ok" and r.answered_by == ["smollm2-135m-instruct"] for r in records), [
        (r.outcome, r.error) for r in records
    ]


def test_which_runs_count_as_a_local_model_and_what_turns_the_judge_off() -> None:
    local = {"EVAL_MODEL": MODEL, "OPENAI_API_KEY": "local", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}
    assert local_models(local) is not None
    assert local_models({**local, "OPENAI_API_KEY": "sk-proj-" + "a" * 40}) is None  # a real key: a real run
    assert local_models({**local, "EVAL_MODEL": "openai:gpt-4.1-mini"}) is None  # priced: a real model
    assert local_models({**local, "EVAL_MODEL": f"{MODEL},anthropic:claude-sonnet-5-5"}) is None
    assert local_models({}) is None  # the default model
    # The judge: passed over on the model's own endpoint, kept when forced (the preflight refuses that
    # one, naming EVAL_JUDGE_SHARED_ENDPOINT) or allowed, and the switch named when it turned it off.
    assert judge_settings(local) is None
    assert judge_settings({**local, "EVAL_JUDGE_PROVIDER": "openai"}) is not None
    assert judge_settings({**local, "EVAL_JUDGE_SHARED_ENDPOINT": "1"}) is not None
    assert judge_settings({**local, "EVAL_MODEL": "control:oracle"}) is not None  # no endpoint shared
    off = no_judge_reason({**local, "EVAL_JUDGE_PROVIDER": "none"})
    assert off == "no judge configured: EVAL_JUDGE_PROVIDER=none turned the judge off"
    assert "OPENAI_BASE_URL" not in off
