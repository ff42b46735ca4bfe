"""The judge calibration Eval through the real `braintrust eval` CLI, with a scripted judge.

The judge is `FakeJudge` on 127.0.0.1 answering from a script, so the agreement statistics are
known in advance and checked against a hand computation (as in tests/analysis/test_agreement.py):
judge-a gets 7 of 10 right (misses C→E, D→A, E→C), judge-b all 10, judge-c fails on one, and
judge-f changes its mind when asked again. Every example is judged twice (the default repeats).
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
from analysis.samples import stale_samples
from braintrust_run import calibration
from evals import calibrate as calibrate_launcher
from harness.environment import forget_process_env
from tests.evals.cli import offline_env, run_cli
from tests.fakes.braintrust_server import FakeBraintrust
from tests.fakes.llama_replay import LlamaReplay, answer
from tests.fakes.openai_judge import FakeJudge
from tests.fakes.scripted_judge import repeat_chooser, script_chooser

PREFLIGHT_PROMPT = "Expert answer: 2\nSubmission: 2"  # what scorers.judge_client's preflight asks the judge
PREFLIGHT_REQUESTS = 2  # the judge preflight's tiny classification and its forced-choice check
LABELS = "CCCDDDABEE"
JUDGE_A = "CCEDDAABCE"
LOCAL_JUDGE = "CCDD"  # the local judge's choices on the first four (labels CCCD)
KAPPA = 0.48 / 0.78  # chance agreement 0.22, observed 0.7
WEIGHTED_KAPPA = 1 - 0.04 / 0.444  # score-distance weights: observed 0.04, chance 0.444
# judge-f's first and second judgements (tests/analysis/test_agreement.py works them out): it fails the right
# answer example-01 and passes the wrong example-04 the first time, then says C for example-01 and E for 09.
JUDGE_F = ("CDCDBDABEC", "CCCDBDABEE")
SELF_KAPPA_F = 0.575 / 0.775  # Fleiss: observed 0.8, chance 0.225


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


def _judges() -> Any:
    """judge-a, -b and -c answer from a script, the same every time; judge-f changes its mind on a repeat."""
    steady = script_chooser(
        {
            "judge-a": {f"marker-{number:02d}": JUDGE_A[number] for number in range(10)},
            "judge-b": {f"marker-{number:02d}": LABELS[number] for number in range(10)},
            "judge-c": {f"marker-{number:02d}": LABELS[number] for number in range(9)},
        }
    )
    flaky = repeat_chooser(
        {"judge-f": {f"marker-{number:02d}": JUDGE_F[0][number] + JUDGE_F[1][number] for number in range(10)}}
    )
    return lambda body: flaky(body) if body.get("model") == "judge-f" else steady(body)


def test_calibration_eval_and_report_match_the_hand_computation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # judge-c fails on example-09 (unscripted: it answers "?", which the template does not accept).
    with FakeJudge(chooser=_judges()) as judge:
        env = _env(tmp_path, judge.env(), "judge-a,judge-b,judge-c,judge-f", _dataset(tmp_path / "small.yaml"))
        completed = run_cli(env, "evals/eval_judge_calibration.py")
        models = sorted(body["model"] for body in judge.bodies)
        headers = [request.headers for request in judge.requests]
    # every example judged twice, each time a request of its own that no cache may answer
    assert models == ["judge-a"] * 20 + ["judge-b"] * 20 + ["judge-c"] * 20 + ["judge-f"] * 20
    assert all(header.get("x-bt-use-cache") == "never" for header in headers)
    # a judge that failed on any judgement fails the run, naming the first error
    assert completed.returncode != 0
    assert (
        "judge-c · factuality@2: the judge failed on 2 of 20 judgements (10 examples), "
        "first: judge call failed: KeyError" in completed.stderr
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
    assert lines["judge-a"]["metadata"]["repeats"] == 2 and lines["judge-a"]["metadata"]["judge_temperature"] == 0
    assert lines["judge-b"]["kappa"] == pytest.approx(1.0) and lines["judge-b"]["trusted"] is True
    assert lines["judge-c"]["judge_errors"] == 2 and lines["judge-c"]["trusted"] is False
    # the judge that answers the same every time agrees with itself fully; the one that changes its mind does not
    assert lines["judge-b"]["self_agreement"]["same_choice_share"] == 1.0
    assert lines["judge-b"]["self_agreement"]["kappa"] == pytest.approx(1.0)
    assert lines["judge-f"]["self_agreement"]["same_choice_share"] == pytest.approx(0.8)
    assert lines["judge-f"]["self_agreement"]["kappa"] == pytest.approx(SELF_KAPPA_F)
    assert lines["judge-f"]["false_alarms"]["examples"] == ["example-01"]

    run_dir = tmp_path / "results" / "calibration-test"
    info, verdicts = load_verdicts(run_dir)
    assert len(verdicts) == 80 and {verdict.judge_template for verdict in verdicts} == {"factuality@2"}
    assert sorted((v.example_id, v.repeat) for v in verdicts if v.choice is None) == [
        ("example-09", 1),
        ("example-09", 2),
    ]
    assert not any(verdict.cache_hit for verdict in verdicts)
    assert (info["repeats"], info["judge_temperature"]) == (2, 0)
    assert info["templates"]["factuality@2"]["B"] == 0.8
    assert info["judge_models"] == ["judge-a", "judge-b", "judge-c", "judge-f"]
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
    # its mistakes never cross the pass line (C for E, A for D): no false alarm (of 6 right answers), no miss (of 4)
    assert (judge_a["false_alarms"]["errors"], judge_a["false_alarms"]["of"]) == (0, 6)
    assert (judge_a["misses"]["errors"], judge_a["misses"]["of"]) == (0, 4)
    assert judge_a["self_agreement"]["same_choice"] == 10 and judge_a["agreement_per_repeat"] == [0.7, 0.7]
    judge_c = report["judge-c"]
    assert (judge_c["examples"], judge_c["judge_errors"], judge_c["trusted"]) == (9, 2, False)
    assert judge_c["first_judge_error"].startswith("judge call failed: KeyError")
    assert (judge_c["self_agreement"]["examples"], judge_c["self_agreement"]["incomplete"]) == (9, 1)
    judge_f = report["judge-f"]
    # first judgements CDCDBDABEC against the labels CCCDDDABEE: 7 exact (01, 04, 09 not); the second, CCCDBDABEE,
    # 9 (04 not). On the first: 1 of 6 right answers failed (01: D), 1 of 4 wrong ones passed (04: B).
    assert judge_f["agreement"] == pytest.approx(0.7) and judge_f["agreement_per_repeat"] == [0.7, 0.9]
    assert judge_f["false_alarms"] == {
        "errors": 1,
        "of": 6,
        "rate": pytest.approx(1 / 6),
        "interval": [pytest.approx(0.03005, abs=1e-5), pytest.approx(0.56350, abs=1e-5)],
        "examples": ["example-01"],
    }
    assert (judge_f["misses"]["errors"], judge_f["misses"]["of"], judge_f["misses"]["examples"]) == (
        1,
        4,
        ["example-04"],
    )
    own = judge_f["self_agreement"]
    assert (own["repeats"], own["examples"], own["same_choice"], own["same_score"]) == (2, 10, 8, 9)
    assert own["kappa"] == pytest.approx(SELF_KAPPA_F)
    assert own["differing"] == {"example-01": ["D", "C"], "example-09": ["C", "E"]}

    monkeypatch.setenv("EVAL_RESULTS_DIR", str(tmp_path / "results"))  # RUN may be a run id there
    assert calibrate.main(["calibration-test", "--min-kappa", "0.8"]) == 1
    text = capsys.readouterr()
    assert "judge judge-a · template factuality@2 · 10 judged, 0 judge error(s)" in text.out
    assert "verdict: TRUSTED" in text.out and "verdict: NOT TRUSTED" in text.out
    assert "not trusted" in text.err
    assert "   false alarms (right, failed)    1 of 6 = 16.7%  [3.0%, 56.4%]  example-01" in text.out
    assert "   misses (wrong, passed)          1 of 4 = 25.0%  [4.6%, 69.9%]  example-04" in text.out
    assert "   self-agreement, 2 repeats       same choice 8 of 10 = 80.0%  [49.0%, 94.3%]" in text.out
    assert "   choices that changed            example-01 D→C, example-09 C→E" in text.out
    assert "   right and wrong answers         labels B, C, E pass (score >= 0.8), A, D fail" in text.out

    # docs/calibration.md shows judge-f's report as `python -m analysis.calibrate RUN` prints it (2000 resamples)
    flaky = next(report for report in calibrate.calibrate(run_dir) if report["judge_model"] == "judge-f")
    sample = f"```text\n{calibrate.render(flaky)}\n```"
    assert stale_samples({"calibration": sample}) == [], f"docs/calibration.md's sample is now:\n{sample}"


@pytest.mark.long  # the gateway's cache is met in make test by tests/scorers/test_judge_repeats.py; here the whole CLI
def test_through_the_gateway_every_repeat_gets_past_its_cache_and_braintrust_gets_self_agreement(
    tmp_path: Path,
) -> None:
    """Braintrust's gateway would answer the second, identical request from its cache (temperature 0)."""
    flaky = repeat_chooser({"*": {f"marker-{n:02d}": JUDGE_F[0][n] + JUDGE_F[1][n] for n in range(4)}})
    with FakeBraintrust(judge_chooser=flaky) as braintrust:
        judge = {**braintrust.env(), "EVAL_JUDGE_PROVIDER": "braintrust"}
        env = _env(tmp_path, judge, "judge-g", _dataset(tmp_path / "four.yaml", count=4))
        completed = run_cli(env, "evals/eval_judge_calibration.py", send_logs=True)
        [experiment] = braintrust.experiments
        roots = braintrust.root_rows(experiment["id"])
        chats = [request for request in braintrust.requests if request.path.endswith("/chat/completions")]
        hits = braintrust.gateway_cache_hits
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert len(chats) == 8 and hits == 0  # four examples, each asked twice, none answered by the cache
    # judge-f's first four: C D C D, then C C C D: it changed its mind on example-01 only
    agreed = {root["metadata"]["example_id"]: root["trace_scores"]["self_agreement"] for root in roots}
    assert agreed == {"example-00": 1, "example-01": 0, "example-02": 1, "example-03": 1}
    assert {root["output"] for root in roots if root["metadata"]["example_id"] == "example-01"} == {"D"}
    assert experiment["metadata"]["repeats"] == 2
    _, verdicts = load_verdicts(tmp_path / "results" / "calibration-test")
    assert len(verdicts) == 8 and not any(verdict.cache_hit for verdict in verdicts)


def test_calibration_is_defined_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVAL_JUDGE_CALIBRATION", "BRAINTRUST_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert calibration.calibration_experiments() == []  # not asked: nothing described, no judge needed, no error
    monkeypatch.setenv("EVAL_JUDGE_CALIBRATION", "1")
    forget_process_env()  # a run reads its settings once; this test changes them
    with pytest.raises(calibration.CalibrationConfigError, match="EVAL_JUDGE_CALIBRATION is set but no judge"):
        calibration.calibration_experiments()
    assert [calibration.requested({"EVAL_JUDGE_CALIBRATION": value}) for value in ("1", "yes", "0", "")] == [
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
    # Two calibrations appended to one folder: the same example's first judgement twice is refused, not averaged.
    verdict = {"example_id": "x", "label": "C", "choice": "C", "judge_model": "m", "judge_template": "factuality@2"}
    (tmp_path / VERDICTS_FILE).write_text(json.dumps(verdict) + "\n" + json.dumps(verdict) + "\n")
    assert calibrate.main([str(tmp_path)]) == 2
    assert "judge m judged example x twice as repeat 1" in capsys.readouterr().err


def test_a_run_from_before_repeats_reads_as_one_judgement_an_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = [
        {"example_id": f"e{n}", "label": label, "choice": choice, "judge_model": "m", "judge_template": "factuality@2"}
        for n, (label, choice) in enumerate(zip("CCDD", "CDDB", strict=True))
    ]
    (tmp_path / VERDICTS_FILE).write_text("".join(json.dumps(line) + "\n" for line in old))
    assert calibrate.main([str(tmp_path), "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "   self-agreement                  n/a (each example judged once)" in out
    assert "   false alarms (right, failed)    1 of 2 = 50.0%" in out and "e1" in out  # C judged D
    assert "   misses (wrong, passed)          1 of 2 = 50.0%" in out and "e3" in out  # D judged B


def test_make_calibrate_refuses_a_repeat_count_under_two(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeJudge() as judge:
        for name, value in judge.env().items():
            monkeypatch.setenv(name, value)
        for value in ("1", "many", "11"):
            monkeypatch.setenv("EVAL_CALIBRATION_REPEATS", value)
            forget_process_env()  # a launcher reads its environment once; this test changes it
            assert calibrate_launcher.main([]) == 2
            assert f"EVAL_CALIBRATION_REPEATS='{value}' is not a whole number from 2 to 10" in capsys.readouterr().err
        asked = len(judge.bodies)
    assert asked == 0  # refused before the preflight: nothing judged


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
    # the preflight's, then two per example (the default repeats)
    assert code == 0 and len(judge.bodies) == PREFLIGHT_REQUESTS + 2 * 4
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
    examples: list[Any] = [_structured_answer] * 8  # four examples, each judged twice
    with LlamaReplay(chat=[*preflight, *examples]) as server:
        env = {
            "EVAL_JUDGE_PROVIDER": "openai",
            "OPENAI_BASE_URL": server.openai_url,
            "OPENAI_API_KEY": "local",
            "EVAL_JUDGE_TOOL_CHOICE": "json_schema",
        }
        code = _make_calibrate(tmp_path, env, monkeypatch)
        sent = server.bodies()
    assert len(sent) == PREFLIGHT_REQUESTS + 2 * 4
    assert all(body["response_format"]["type"] == "json_schema" and "tools" not in body for body in sent)
    output = capsys.readouterr().out
    assert "judge judge-b · template factuality@2 · 4 judged, 0 judge error(s)" in output
    assert "Cohen's kappa, unweighted       0.500  [" in output  # labels CCCD, judged CCDD: (0.75-0.5)/(1-0.5)
    assert "verdict: NOT TRUSTED" in output and code == 1
    info, verdicts = load_verdicts(tmp_path / "results" / "calibration-test")
    assert sorted((verdict.example_id, verdict.repeat, verdict.choice) for verdict in verdicts) == [
        (f"example-{number:02d}", repeat, LOCAL_JUDGE[number]) for number in range(4) for repeat in (1, 2)
    ]
    assert "   self-agreement, 2 repeats       same choice 4 of 4 = 100.0%" in output
    assert info["judge_route"]["judge_tool_choice"] == "json_schema"
