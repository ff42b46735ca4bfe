"""The judge calibration Eval through the real `braintrust eval` CLI, with a scripted judge.

The judge is `FakeJudge` on 127.0.0.1 answering from a script, so the agreement statistics are
known in advance and checked against a hand computation (as in tests/analysis/test_agreement.py):
judge-a gets 7 of 10 right (misses C→E, D→A, E→C), judge-b all 10, judge-c fails on one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from analysis import calibrate
from analysis.calibration_records import INFO_FILE, VERDICTS_FILE, load_verdicts
from evals import _calibration
from evals import calibrate as calibrate_launcher
from harness.environment import forget_process_env
from tests.evals.cli import offline_env, run_cli
from tests.fakes.llama_replay import LlamaReplay, answer
from tests.fakes.openai_judge import FakeJudge
from tests.fakes.scripted_judge import script_chooser

PREFLIGHT_PROMPT = "Expert answer: 2\nSubmission: 2"  # what scorers.judge's preflight asks the judge
PREFLIGHT_REQUESTS = 2  # the judge preflight's tiny classification and its forced-choice check
LABELS = "CCCDDDABEE"
JUDGE_A = "CCEDDAABCE"
LOCAL_JUDGE = "CCDD"  # the local judge's choices on the first four (labels CCCD)
KAPPA = 0.48 / 0.78  # chance agreement 0.22, observed 0.7
WEIGHTED_KAPPA = 1 - 0.04 / 0.444  # score-distance weights: observed 0.04, chance 0.444


def _dataset(path: Path, count: int = 10) -> Path:
    examples = [
        {
            "id": f"example-{number:02d}",
            "label": LABELS[number],
            "traps": ["failed_change"] if number < 3 else [],
            "conversation": [f"Question {number}?"],
            "expected": f"Expert answer {number}.",
            "submission": f"Submission marker-{number:02d}.",
            "why": "scripted",
        }
        for number in range(count)
    ]
    path.write_text(yaml.safe_dump({"version": 1, "examples": examples}))
    return path


def _env(tmp_path: Path, judge: dict[str, str], models: str, dataset: Path) -> dict[str, str]:
    return offline_env(
        tmp_path / "results",
        EVAL_JUDGE_CALIBRATION="1",
        EVAL_JUDGE_DATASET=str(dataset),
        EVAL_CALIBRATION_JUDGES=models,
        EVAL_RUN_ID="calibration-test",
        **judge,
    )


def test_calibration_eval_and_report_match_the_hand_computation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # judge-c fails on example-09 (unscripted: it answers "?", which the template does not accept).
    script = {
        "judge-a": {f"marker-{number:02d}": JUDGE_A[number] for number in range(10)},
        "judge-b": {f"marker-{number:02d}": LABELS[number] for number in range(10)},
        "judge-c": {f"marker-{number:02d}": LABELS[number] for number in range(9)},
    }
    with FakeJudge(chooser=script_chooser(script)) as judge:
        env = _env(tmp_path, judge.env(), "judge-a,judge-b,judge-c", _dataset(tmp_path / "small.yaml"))
        completed = run_cli(env, "evals/eval_judge_calibration.py")
        models = sorted(body["model"] for body in judge.bodies)
    assert models == ["judge-a"] * 10 + ["judge-b"] * 10 + ["judge-c"] * 10
    # a judge that failed on any example fails the run, naming the first error
    assert completed.returncode != 0
    assert "judge-c · factuality@2: the judge failed on 1 of 10 examples, first: judge call failed: KeyError" in (
        completed.stderr
    )
    lines = {
        line["judge_model"]: line
        for line in map(json.loads, filter(None, completed.stdout.splitlines()))
        if isinstance(line, dict) and "calibration" in line
    }
    assert lines["judge-a"]["calibration"] == "judge_calibration · judge-a · factuality@2"
    assert lines["judge-a"]["agreement"] == pytest.approx(0.7)
    assert lines["judge-a"]["kappa"] == pytest.approx(KAPPA)
    assert lines["judge-a"]["weighted_kappa"] == pytest.approx(WEIGHTED_KAPPA)
    assert lines["judge-b"]["kappa"] == pytest.approx(1.0) and lines["judge-b"]["trusted"] is True
    assert lines["judge-c"]["judge_errors"] == 1 and lines["judge-c"]["trusted"] is False

    run_dir = tmp_path / "results" / "calibration-test"
    info, verdicts = load_verdicts(run_dir)
    assert len(verdicts) == 30 and {verdict.judge_template for verdict in verdicts} == {"factuality@2"}
    assert [verdict.example_id for verdict in verdicts if verdict.choice is None] == ["example-09"]
    assert info["templates"]["factuality@2"]["B"] == 0.8 and info["judge_models"] == ["judge-a", "judge-b", "judge-c"]
    assert "fake-judge-key" not in (run_dir / VERDICTS_FILE).read_text() + (run_dir / INFO_FILE).read_text()

    assert calibrate.main([str(run_dir), "--json", "--bootstrap", "300"]) == 0
    report = {judge["judge_model"]: judge for judge in json.loads(capsys.readouterr().out)["judges"]}
    judge_a = report["judge-a"]
    assert (judge_a["examples"], judge_a["judge_errors"], judge_a["agreement"]) == (10, 0, 0.7)
    assert judge_a["kappa"] == pytest.approx(KAPPA) and judge_a["weighted_kappa"] == pytest.approx(WEIGHTED_KAPPA)
    assert judge_a["mean_score_distance"] == pytest.approx(0.04)
    low, high = judge_a["kappa_interval"]
    assert low < KAPPA < high
    assert judge_a["confusion"][2] == [0, 0, 2, 0, 1] and judge_a["confusion"][3] == [1, 0, 0, 2, 0]
    assert judge_a["traps"] == {"failed_change": {"exact": 2, "judged": 3}}
    assert judge_a["trusted"] is True  # weighted kappa 0.91 >= 0.8: C/E mix-ups cost no score
    judge_c = report["judge-c"]
    assert (judge_c["examples"], judge_c["judge_errors"], judge_c["trusted"]) == (9, 1, False)
    assert judge_c["first_judge_error"].startswith("judge call failed: KeyError")

    monkeypatch.setenv("EVAL_RESULTS_DIR", str(tmp_path / "results"))  # RUN may be a run id there
    assert calibrate.main(["calibration-test", "--min-kappa", "0.8"]) == 1
    text = capsys.readouterr()
    assert "judge judge-a · template factuality@2 · 10 judged, 0 judge error(s)" in text.out
    assert "verdict: TRUSTED" in text.out and "verdict: NOT TRUSTED" in text.out
    assert "not trusted" in text.err


def test_calibration_is_defined_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVAL_JUDGE_CALIBRATION", "BRAINTRUST_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    _calibration.define_calibration_evals()  # not asked: nothing defined, no judge needed, no error
    monkeypatch.setenv("EVAL_JUDGE_CALIBRATION", "1")
    forget_process_env()  # a run reads its settings once; this test changes them
    with pytest.raises(_calibration.CalibrationConfigError, match="EVAL_JUDGE_CALIBRATION is set but no judge"):
        _calibration.define_calibration_evals()
    assert [_calibration.requested({"EVAL_JUDGE_CALIBRATION": value}) for value in ("1", "yes", "0", "")] == [
        True,
        True,
        False,
        False,
    ]


def test_calibrate_names_what_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert calibrate.main([str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such run folder" in capsys.readouterr().err
    assert calibrate.main([str(tmp_path)]) == 2
    assert f"no {VERDICTS_FILE}" in capsys.readouterr().err
    (tmp_path / VERDICTS_FILE).write_text('{"example_id": "x"}\n')
    assert calibrate.main([str(tmp_path)]) == 2
    assert f"{VERDICTS_FILE}:1: not a verdict record" in capsys.readouterr().err


def _make_calibrate(tmp_path: Path, judge: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> int:
    """`make calibrate` (its launcher, in this process) on four examples with the judge `judge` routes to as judge-b."""
    env = _env(tmp_path, judge, "judge-b", _dataset(tmp_path / "four.yaml", count=4))
    for name in [name for name in os.environ if name.startswith(("EVAL_", "OPENAI_", "ANTHROPIC_", "BRAINTRUST_"))]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("BRAINTRUST_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(name, "")  # set, so a developer's .env cannot fill them in (load_dotenv keeps them)
    return calibrate_launcher.main(["--no-progress-bars"])


@pytest.mark.long  # `make calibrate` whole; the test at the top computes the same by hand
def test_make_calibrate_runs_the_eval_and_judges_the_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {"*": {f"marker-{number:02d}": LABELS[number] for number in range(4)}}
    script["*"][PREFLIGHT_PROMPT] = "C"  # the preflight's own tiny classification, before any example
    with FakeJudge(chooser=script_chooser(script)) as judge:
        code = _make_calibrate(tmp_path, judge.env(), monkeypatch)
    assert code == 0 and len(judge.bodies) == 4 + PREFLIGHT_REQUESTS  # the preflight's, then one per example
    output = capsys.readouterr().out
    assert "judge judge-b · template factuality@2 · 4 judged, 0 judge error(s)" in output
    assert "verdict: TRUSTED" in output


def test_make_calibrate_stops_at_the_preflight_when_the_route_ignores_forced_tool_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama-server takes an object tool_choice as `auto`: 80 calibration calls would all fail."""
    with FakeJudge(ignores_forced_choice=True) as judge:
        code = _make_calibrate(tmp_path, judge.env(), monkeypatch)
    captured = capsys.readouterr()
    assert code == 2 and len(judge.bodies) <= PREFLIGHT_REQUESTS  # nothing judged
    assert "judge judge-b: verdict: NOT TRUSTED (refused at the preflight" in captured.out
    assert "calibrate: " in captured.err and "judge-b" in captured.err
    assert not (tmp_path / "results" / "calibration-test" / "judge_calibration.jsonl").exists()


def test_make_calibrate_without_a_judge_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EVAL_JUDGE_PROVIDER", "none")
    assert calibrate_launcher.main([]) == 2
    assert "calibrate: no judge configured" in capsys.readouterr().err


def _structured_answer(body: dict[str, Any]) -> tuple[int, Any]:
    """llama-server's recorded structured-output answer, its content (the one field changed) the scripted label."""
    status, reply = answer("judge_json_schema_example")
    prompt = "\n".join(str(message["content"]) for message in body["messages"])
    chosen = next((LOCAL_JUDGE[number] for number in range(4) if f"marker-{number:02d}" in prompt), "C")
    reasons = f"The scripted reasons for {chosen}."
    reply["choices"][0]["message"]["content"] = json.dumps({"reasons": reasons, "choice": chosen})
    return status, reply


@pytest.mark.long  # `make calibrate` whole, with a local judge
def test_make_calibrate_with_a_local_judge_in_json_schema_mode_prints_kappa_and_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama-server's way: the preflight and every example asked as structured output, read back as the call."""
    preflight = ["judge_json_schema_preflight_classification", "judge_json_schema_preflight_forced"]
    examples: list[Any] = [_structured_answer] * 4
    with LlamaReplay(chat=[*preflight, *examples]) as server:
        env = {
            "EVAL_JUDGE_PROVIDER": "openai",
            "OPENAI_BASE_URL": server.openai_url,
            "OPENAI_API_KEY": "local",
            "EVAL_JUDGE_TOOL_CHOICE": "json_schema",
        }
        code = _make_calibrate(tmp_path, env, monkeypatch)
        sent = server.bodies()
    assert len(sent) == PREFLIGHT_REQUESTS + 4
    assert all(body["response_format"]["type"] == "json_schema" and "tools" not in body for body in sent)
    output = capsys.readouterr().out
    assert "judge judge-b · template factuality@2 · 4 judged, 0 judge error(s)" in output
    assert "Cohen's kappa, unweighted       0.500  [" in output  # labels CCCD, judged CCDD: (0.75-0.5)/(1-0.5)
    assert "verdict: NOT TRUSTED" in output and code == 1
    info, verdicts = load_verdicts(tmp_path / "results" / "calibration-test")
    assert sorted((verdict.example_id, verdict.choice) for verdict in verdicts) == [
        (f"example-{number:02d}", LOCAL_JUDGE[number]) for number in range(4)
    ]
    assert info["judge_route"]["judge_tool_choice"] == "json_schema"
