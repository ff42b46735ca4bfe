"""`python -m braintrust_run.rejudge RUN`: the judge asked twice about a run's own answers, through a real HTTP judge.

Three answered trials and one cut off at the turn cap; the stand-in judge answers C twice for the
first, C then D for the second (the verdict flips) and B then C for the third (another score, the
same pass). Self-agreement worked out by hand: the same choice on 1 of 3, the same score on 1 of 3,
the same pass/fail on 2 of 3; Fleiss' kappa: observed 1/3, chance (4/6)² + (1/6)² + (1/6)² = 1/2,
so (1/3 − 1/2) / (1 − 1/2) = −1/3.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from braintrust_run import rejudge
from harness.cases import load_cases
from harness.environment import forget_process_env
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import TRIALS_FILE
from scorers.registry import spec
from tests.fakes.openai_judge import FakeJudge
from tests.fakes.scripted_judge import repeat_chooser

PREFLIGHT_PROMPT = "Expert answer: 2\nSubmission: 2"  # what scorers.judge_client's preflight asks the judge
CASE_IDS = ("complete-add-column-subtitle", "read-count-posts", "add-column-description", "read-count-posts")


def _run(folder: Path) -> Path:
    cases = {case.id: case for case in load_cases()}
    records = [
        TrialRecord(
            case_id=case_id,
            trial_index=index,
            config=TrialConfig(model="anthropic:claude-sonnet-4-6", server="local"),
            input=cases[case_id].input,
            follow_ups=list(cases[case_id].follow_ups),
            final_answer=f"Done, answer marker-{index}.",
            outcome="ok" if index < 3 else "turn_cap",
            started_at=f"2026-12-01T00:00:0{index}Z",
        )
        for index, case_id in enumerate(CASE_IDS)
    ]
    folder.mkdir()
    (folder / TRIALS_FILE).write_text("".join(record.model_dump_json() + "\n" for record in records))
    return folder


def _judge_env(judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith(("EVAL_", "OPENAI_", "ANTHROPIC_", "BRAINTRUST_"))]:
        monkeypatch.delenv(name)
    for name, value in judge.env().items():
        monkeypatch.setenv(name, value)
    for name in ("BRAINTRUST_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(name, "")  # set, so a developer's .env cannot fill them in
    forget_process_env()


def test_a_runs_answers_judged_twice_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path / "run")
    script = {"*": {"marker-0": "C", "marker-1": "CD", "marker-2": "BC", PREFLIGHT_PROMPT: "C"}}
    with FakeJudge(chooser=repeat_chooser(script)) as judge:
        _judge_env(judge, monkeypatch)
        assert rejudge.main([str(run), "--json", "--bootstrap", "200"]) == 0
        judged = [prompt for prompt in judge.prompts if "marker-" in prompt]
        headers = [request.headers for request in judge.requests if "marker-" in json.dumps(request.body)]
    report = json.loads(capsys.readouterr().out)
    assert len(judged) == 6 and all(header.get("x-bt-use-cache") == "never" for header in headers)
    assert (report["trials"], report["judged"], report["not_judged"], report["judge_errors"]) == (4, 3, 1, 0)
    own = report["self_agreement"]
    assert (own["examples"], own["same_choice"], own["same_score"], own["same_verdict"]) == (3, 1, 1, 2)
    assert own["kappa"] == pytest.approx(-1 / 3)
    assert own["differing"] == {
        "read-count-posts#1": ["C", "D"],
        "add-column-description#2": ["B", "C"],
    }
    kept = [json.loads(line) for line in (run / rejudge.REPEATS_FILE).read_text().splitlines()]
    assert [(line["trial"], line["repeat"], line["choice"], line["score"]) for line in kept] == [
        ("complete-add-column-subtitle#0", 1, "C", 1.0),
        ("complete-add-column-subtitle#0", 2, "C", 1.0),
        ("read-count-posts#1", 1, "C", 1.0),
        ("read-count-posts#1", 2, "D", 0.0),
        ("add-column-description#2", 1, "B", 0.8),
        ("add-column-description#2", 2, "C", 1.0),
    ]
    assert "fake-judge-key" not in (run / rejudge.REPEATS_FILE).read_text()
    # Every judgement names the judge's version: factuality's code and the template's bytes.
    version = spec("factuality").version({})
    assert report["judge_version"] == version and {line["judge_version"] for line in kept} == {version}


def test_rejudge_names_what_it_cannot_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeJudge(chooser=repeat_chooser({"*": {PREFLIGHT_PROMPT: "C"}})) as judge:
        _judge_env(judge, monkeypatch)
        assert rejudge.main([str(tmp_path / "nowhere")]) == 2
        assert "nowhere: no such run folder" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            rejudge.main([str(tmp_path), "--repeats", "1"])
        assert "'1' is not a whole number from 2 to 10" in capsys.readouterr().err
    monkeypatch.setenv("EVAL_JUDGE_PROVIDER", "none")
    forget_process_env()
    assert rejudge.main([str(_run(tmp_path / "run"))]) == 2
    assert "rejudge: no judge configured" in capsys.readouterr().err
