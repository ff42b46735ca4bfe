"""Paired comparison of two runs: the exact test and bootstrap, then real runs of the control agents
(oracle as A, unsafe as B) on the local server, compared through the command line: one vote per case
(tests/analysis/test_paired.py holds the hand-computed statistics)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from analysis import pr_comment
from analysis.compare import main
from analysis.compare_stats import BETTER, SAME, WORSE, compare
from analysis.runs import RunInputError
from analysis.stats import mcnemar_exact, paired_bootstrap
from harness.cases import BUNDLED_DATASET, Case, load_cases
from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.recording.records import TrialRecord
from harness.recording.store import RUN_FILE, TRIALS_FILE, load_run
from harness.run.trial import TrialRunner
from tests.evals.cli import python_module, run_in_repo
from tests.harness.conftest import TOKEN

CASE_IDS = [
    "add-column-description",
    "add-column-category",
    "add-column-reading-time",
    "rename-column-content-to-body",
    "add-column-is-featured",
    "create-index-posts-title",
]
TRIALS = 2
DATASET = str(BUNDLED_DATASET)


# -- the exact test, the bootstrap, the sample-size note ---------------------------------------------


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [(0, 0, 1.0), (0, 6, 0.03125), (1, 9, 0.021484375), (2, 8, 0.109375), (5, 5, 1.0), (0, 1, 1.0), (0, 5, 0.0625)],
)
def test_mcnemar_exact_matches_the_binomial_tail(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=1e-12)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)


def test_mcnemar_exact_stays_exact_for_large_counts_and_rejects_negatives() -> None:
    assert mcnemar_exact(0, 60) == pytest.approx(2 / 2**60, rel=1e-12)
    assert 0 < mcnemar_exact(400, 520) < 0.001  # big n: no overflow, no float underflow of the tail
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_exact(-1, 3)


MIXED = [
    [(True, True), (True, False)],
    [(False, True), (False, True)],
    [(True, True), (True, True)],
    [(False, False), (False, True)],
    [(True, False), (True, True)],
    [(False, True), (True, True)],
]


def test_bootstrap_is_deterministic_for_a_seed_and_covers_the_observed_difference() -> None:
    pairs = [pair for case in MIXED for pair in case]
    observed = sum(int(b) - int(a) for a, b in pairs) / len(pairs)
    first = paired_bootstrap(MIXED, resamples=2000, seed=7)
    assert first is not None and first == paired_bootstrap(MIXED, resamples=2000, seed=7)
    assert first.low <= observed <= first.high and first.low < first.high
    others = {paired_bootstrap(MIXED, resamples=200, seed=seed) for seed in range(5)}
    assert len(others) > 1  # the seed matters: the interval really comes from resampling
    for seed in range(5):
        interval = paired_bootstrap(MIXED, resamples=500, seed=seed)
        assert interval is not None and interval.low <= observed <= interval.high
    unanimous = paired_bootstrap([[(True, False)] * 2] * 3, resamples=100, seed=0)
    assert unanimous is not None and (unanimous.low, unanimous.high) == (-1.0, -1.0)
    assert paired_bootstrap([], resamples=100) is None


# -- real runs of the control agents -------------------------------------------------------------------


@dataclass(frozen=True)
class Runs:
    results: Path
    oracle: Path
    unsafe: Path
    cases: list[Case]


async def _run(server: LocalServer, results: Path, model: str, run_id: str, cases: list[Case]) -> Path:
    env = {"EVAL_MODEL": model, "EVAL_RESULTS_DIR": str(results), "EVAL_RUN_ID": run_id}
    settings = Settings.from_env(env=env, dotenv_path=None, warn=False)
    async with TrialRunner(settings, local_server=server) as runner:
        records = await asyncio.gather(*(runner.run(case, index) for case in cases for index in range(TRIALS)))
    assert all(record.outcome == "ok" for record in records), [record.error for record in records]
    return results / run_id


@pytest.fixture(scope="module")
async def runs(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Runs]:
    """Run A (control:oracle) and run B (control:unsafe): 6 bundled prepare cases x 2 trials each."""
    by_id = {case.id: case for case in load_cases(DATASET)}
    cases = [by_id[case_id] for case_id in CASE_IDS]
    results = tmp_path_factory.mktemp("results")
    server = LocalServer(token=TOKEN)
    try:
        await server.start()
        oracle = await _run(server, results, "control:oracle", "a", cases)
        unsafe = await _run(server, results, "control:unsafe", "b", cases)
    finally:
        server.stop()
    yield Runs(results, oracle, unsafe, cases)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, "--dataset", DATASET])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_unsafe_is_worse_on_integrity_and_trajectory(runs: Runs, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, str(runs.oracle), str(runs.unsafe), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["paired"], data["paired_cases"], data["unpaired_a"], data["unpaired_b"]) == (12, 6, 0, 0)
    assert (data["a"]["model"], data["b"]["model"]) == ("control:oracle", "control:unsafe")
    assert data["unit"] == "cases"
    scores = data["scores"]
    for name in ("main_branch_integrity", "tool_trajectory", "all_scores"):
        score = scores[name]
        assert score["verdict"] == WORSE, (name, score)
        assert (score["cases"], score["cases_a_better"], score["cases_b_better"], score["cases_tied"]) == (6, 6, 0, 0)
        assert score["p_value"] == pytest.approx(2 / 2**6)  # six votes, not twelve trial pairs
        assert (score["pairs"], score["a_pass_b_fail"], score["a_fail_b_pass"]) == (12, 12, 0)
        assert (score["a"]["passed"], score["b"]["passed"], score["difference"]) == (12, 0, -1.0)
        assert score["a"]["pass_hat"] == {"1": 1.0, "2": 1.0} and score["b"]["pass_hat"] == {"1": 0.0, "2": 0.0}
        assert score["bootstrap"] == {"low": -1.0, "high": -1.0}
        assert sorted(change["case_id"] for change in score["regressed"]) == sorted(CASE_IDS)
        assert score["improved"] == [] and score["cases_needed"] == 6 and score["unit"] == "cases"
    # Adding a column rewrites every row's content hash; renaming one or adding an index does not.
    data_scores = scores["data_integrity"]
    votes = (data_scores["cases_a_better"], data_scores["cases_b_better"], data_scores["cases_tied"])
    assert votes == (4, 0, 2) and data_scores["verdict"] == SAME, data_scores
    assert data_scores["p_value"] == pytest.approx(0.125)  # 2·(1/2)^4, however many trials each case ran
    assert (data_scores["a_pass_b_fail"], data_scores["a_fail_b_pass"]) == (8, 0)
    assert data_scores["cases_needed"] == 9  # six votes decide; 4 of 6 cases vote: 6 / (4/6)
    added = sorted(CASE_IDS[:3] + CASE_IDS[4:5])
    assert [change["case_id"] for change in data_scores["improved"] + data_scores["regressed"]] == added
    # The user never answers a prepare case: cleanup cannot be judged, and says so.
    cleanup = scores["temporary_branch_cleanup"]
    assert (cleanup["pairs"], cleanup["dropped"], cleanup["unscorable_a"], cleanup["unscorable_b"]) == (0, 12, 12, 12)
    assert (cleanup["cases"], cleanup["p_value"], cleanup["verdict"], cleanup["difference"]) == (0, 1.0, SAME, None)


def test_four_cases_of_two_trials_are_four_votes_and_decide_nothing(runs: Runs) -> None:
    """The issue's example on real records: eight discordant trial pairs would say p = 0.0078; the four
    cases behind them say 4-0, p = 0.125."""
    _, oracle = load_run(runs.oracle)
    _, unsafe = load_run(runs.unsafe)
    four = set(CASE_IDS[:4])
    result = compare(
        [r for r in oracle if r.case_id in four], [r for r in unsafe if r.case_id in four], runs.cases, resamples=200
    )
    trajectory = result.scores["tool_trajectory"]
    assert (trajectory.pairs, trajectory.a_pass_b_fail, trajectory.a_fail_b_pass) == (8, 8, 0)
    assert mcnemar_exact(8, 0) == pytest.approx(0.0078125)
    assert (trajectory.cases, trajectory.cases_a_better, trajectory.cases_b_better) == (4, 4, 0)
    assert (trajectory.p_value, trajectory.verdict) == (0.125, SAME)


def test_text_report_names_the_verdict_and_the_unit(runs: Runs, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, str(runs.oracle), str(runs.unsafe))
    assert code == 0, err
    print(out, file=sys.stderr)  # visible with -s
    lines = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    header = lines["score"].split()
    assert header[:3] == ["score", "cases", "pairs"] and header[-5:] == ["A>B", "B>A", "tie", "p", "verdict"]
    for name in ("main_branch_integrity", "tool_trajectory"):
        cells = lines[name].split()
        assert cells[1:3] == ["6", "12"] and lines[name].endswith(WORSE), lines[name]
        assert cells[-6:-2] == ["6", "0", "0", "0.0312"], cells  # A>B, B>A, tie, p; then "B worse"
    assert (
        "B worse (p = 0.03125, one vote per case: 0 cases favour B, 6 favour A, 0 tied; "
        "trial pairs: 12 A-pass/B-fail, 0 A-fail/B-pass)"
    ) in out
    assert "unit: the case (its paired trials cast one vote" in out
    assert "exact sign test over cases, one vote per case" in out
    assert "unscorable: 12 pairs dropped (12 trials in A, 12 in B)" in out
    assert "regressed (6): add-column-category 2/2→0/2" in out
    assert "paired 12 trials by (case_id, trial_index) over 6 cases; unpaired: 0 of 12 in A, 0 of 12 in B" in out
    needed = {line.split()[0]: line.split(maxsplit=1)[1] for line in out.split("cases needed")[1].splitlines()[1:6]}
    assert needed["tool_trajectory"] == "6 cases" and needed["data_integrity"] == "9 cases"
    assert needed["temporary_branch_cleanup"] == "—"


def test_a_run_compared_with_itself_shows_no_difference(runs: Runs) -> None:
    completed = run_in_repo(
        python_module("analysis.compare", str(runs.oracle), str(runs.oracle), "--json", "--dataset", DATASET),
        None,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    data = json.loads(completed.stdout)
    for name, score in data["scores"].items():
        assert (score["p_value"], score["verdict"]) == (1.0, SAME), name
        assert score["improved"] == score["regressed"] == [] and score["cases_needed"] is None
        assert score["cases_a_better"] == score["cases_b_better"] == 0
    assert data["scores"]["tool_trajectory"]["difference"] == 0.0


def test_one_run_holding_both_models_is_compared_model_against_model(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = tmp_path / "both"
    both.mkdir()
    (both / "trials.jsonl").write_text(
        (runs.oracle / "trials.jsonl").read_text() + (runs.unsafe / "trials.jsonl").read_text()
    )
    code, _, err = _cli(capsys, str(both), str(both))
    assert code == 2 and "several models (control:oracle, control:unsafe)" in err and "--model-a" in err
    code, _, err = _cli(capsys, str(both), str(both), "--model-a", "control:oracle", "--model-b", "gpt-x")
    assert code == 2 and "no trials of model 'gpt-x'" in err
    code, out, err = _cli(
        capsys, str(both), str(both), "--model-a", "control:unsafe", "--model-b", "control:oracle", "--json"
    )
    assert code == 0, err
    trajectory = json.loads(out)["scores"]["tool_trajectory"]
    assert (trajectory["verdict"], trajectory["cases_b_better"], trajectory["cases_a_better"]) == (BETTER, 6, 0)
    assert (trajectory["a_fail_b_pass"], trajectory["a_pass_b_fail"]) == (12, 0)


def test_infra_errors_and_unpaired_trials_are_left_out_and_counted(runs: Runs) -> None:
    _, oracle = load_run(runs.oracle)
    _, unsafe = load_run(runs.unsafe)
    broken: list[TrialRecord] = [  # trial 0 of the first case could not be judged; trial 1 of the second is lost
        record.model_copy(update={"outcome": "infra_error"})
        if (record.case_id, record.trial_index) == (CASE_IDS[0], 0)
        else record
        for record in unsafe
        if (record.case_id, record.trial_index) != (CASE_IDS[1], 1)
    ]
    extra = oracle[0].model_copy(update={"trial_index": 9})  # a trial B never ran
    result = compare([*oracle, extra], broken, runs.cases, ["tool_trajectory"], resamples=200)
    assert (result.paired, result.unpaired_a, result.unpaired_b) == (11, 2, 0)
    trajectory = result.scores["tool_trajectory"]
    assert (trajectory.pairs, trajectory.dropped, trajectory.unscorable_a, trajectory.unscorable_b) == (10, 1, 0, 1)
    assert (trajectory.a_pass_b_fail, trajectory.a_fail_b_pass) == (10, 0)
    # Two trials dropped, from two cases that keep their other trial: every case still votes once.
    assert (trajectory.cases, trajectory.cases_a_better, trajectory.verdict) == (6, 6, WORSE)
    assert trajectory.p_value == pytest.approx(0.03125)
    assert set(result.scores) == {"tool_trajectory", "all_scores"}
    with pytest.raises(RunInputError, match="unknown score factuality"):
        compare(oracle, unsafe, runs.cases, ["factuality"])
    with pytest.raises(RunInputError, match="share no"):
        compare(oracle[:1], [record for record in unsafe if record.case_id != oracle[0].case_id], runs.cases)
    with pytest.raises(RunInputError, match="appears twice"):
        compare([*oracle, oracle[0]], unsafe, runs.cases)


def test_trials_of_a_changed_case_are_refused(runs: Runs) -> None:
    _, oracle = load_run(runs.oracle)
    _, unsafe = load_run(runs.unsafe)
    assert all(
        record.case_hash == next(c for c in runs.cases if c.id == record.case_id).content_hash() for record in oracle
    )
    edited = [
        case.model_copy(update={"input": case.input + " Please."}) if case.id == oracle[0].case_id else case
        for case in runs.cases
    ]
    with pytest.raises(RunInputError, match=f"1 case\\(s\\) changed since their trials ran .*'{oracle[0].case_id}'"):
        compare(oracle, unsafe, edited, ["tool_trajectory"], resamples=200)
    unhashed = [record.model_copy(update={"case_hash": ""}) for record in (*oracle, *unsafe)]  # older records
    compare(unhashed[: len(oracle)], unhashed[len(oracle) :], edited, ["tool_trajectory"], resamples=200)


# -- bad input --------------------------------------------------------------------------------------


def test_bad_input_gives_a_clear_error_and_exit_2(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-run"
    code, out, err = _cli(capsys, str(missing), str(runs.unsafe))
    assert (code, out) == (2, "") and f"{missing}: no such run folder" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "trials.jsonl").write_text("")
    code, _, err = _cli(capsys, str(runs.oracle), str(empty))
    assert code == 2 and f"{empty}: the run has no trials" in err
    code, _, err = _cli(capsys, str(tmp_path), str(runs.oracle))  # a folder with no trials.jsonl at all
    assert code == 2 and "the run has no trials" in err
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "trials.jsonl").write_text('{"case_id": 1}\n')
    code, _, err = _cli(capsys, str(corrupt), str(runs.oracle))
    assert code == 2 and "trials.jsonl:1: not a trial record" in err
    # The bundled complete-scenario file holds none of these prepare cases.
    code = main([str(runs.oracle), str(runs.unsafe), "--dataset", str(BUNDLED_DATASET / "complete.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "A: 6 case(s) not in the dataset" in err and "'add-column-category'" in err
    code = main([str(runs.oracle), str(runs.unsafe), "--dataset", str(tmp_path / "nowhere.yaml")])
    assert code == 2 and "no such dataset" in capsys.readouterr().err


def test_a_run_id_is_found_under_the_results_folder(
    runs: Runs, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_RESULTS_DIR", str(runs.results))
    code, out, err = _cli(capsys, "a", "b", "--score", "main_branch_integrity", "--bootstrap", "50", "--seed", "3")
    assert code == 0, err
    assert "main_branch_integrity: B worse" in out and "tool_trajectory" not in out
    assert "bootstrap over cases, 50 resamples, seed 3" in out


# -- the pull request's table (analysis.pr_comment), from these runs ----------------------------------


def relabelled(run: Path, model: str, into: Path) -> Path:
    """A copy of `run` whose trials name `model`: the unsafe agent's real records as a base that the
    oracle's run is compared with, agent for agent, as a PR's run is with main's."""
    into.mkdir(parents=True)
    shutil.copy(run / RUN_FILE, into / RUN_FILE)
    _, records = load_run(run)
    lines = [r.model_copy(update={"config": r.config.model_copy(update={"model": model})}) for r in records]
    (into / TRIALS_FILE).write_text("".join(record.model_dump_json() + "\n" for record in lines))
    return into


def rows(markdown: str) -> dict[str, list[str]]:
    """The table's rows by score name (one experiment in the comment)."""
    cells = [line.strip("|").split("|") for line in markdown.splitlines() if line.startswith("| ")]
    return {cell[0].strip(): [c.strip() for c in cell[1:]] for cell in cells if cell[0].strip() != "score"}


def test_the_pr_comment_shows_each_scores_paired_change_and_verdict(runs: Runs, tmp_path: Path) -> None:
    base = relabelled(runs.unsafe, "control:oracle", tmp_path / "main-nightly")
    link = ("report", "https://github.com/o/r/actions/runs/1")
    markdown = pr_comment.render(runs.oracle, base, [link], Path(DATASET))
    assert markdown.startswith(pr_comment.MARKER + "\n## MCP evals: `a`: 12 trials\n")
    assert "Compared with `main-nightly`, trial by trial" in markdown
    assert "### prepare · `control:oracle`" in markdown and "12 trials over 6 cases; outcomes: ok 12" in markdown
    table = rows(markdown)
    # pass, CI, change, improved, regressed, verdict, scored, n/a
    # improved and regressed count cases (one vote each); six unanimous votes decide (p = 2/64)
    assert table["main_branch_integrity"][:6] == ["100.0%", "75.8% – 100.0%", "+100.0 pp", "6", "0", "better 🟢"]
    assert table["tool_trajectory"][2:6] == ["+100.0 pp", "6", "0", "better 🟢"]
    assert markdown.rstrip().endswith("[report](https://github.com/o/r/actions/runs/1)")
    worse = rows(pr_comment.render(base, runs.oracle, dataset=Path(DATASET)))
    assert worse["main_branch_integrity"][2:6] == ["-100.0 pp", "0", "6", "worse 🔴"]


def test_the_pr_comment_against_itself_and_without_a_base(runs: Runs, tmp_path: Path) -> None:
    same = rows(pr_comment.render(runs.oracle, runs.oracle, dataset=Path(DATASET)))
    scored = {name: cells for name, cells in same.items() if cells[6] != "0"}  # cleanup is n/a on prepare
    assert {cells[2] for cells in scored.values()} == {"+0.0 pp"} and "main_branch_integrity" in scored
    assert {cells[5] for cells in scored.values()} == {"no significant change"}
    assert same["temporary_branch_cleanup"][2] == "n/a: scored in neither run"
    alone = pr_comment.render(runs.oracle, None, dataset=Path(DATASET))
    assert {cells[2] for cells in rows(alone).values()} == {"no base run"}
    other_agent = rows(pr_comment.render(runs.oracle, runs.unsafe, dataset=Path(DATASET)))  # no oracle in base
    assert {cells[2] for cells in other_agent.values()} == {"no base trials of this agent and scenario"}
    empty = tmp_path / "stopped-at-start"
    empty.mkdir()
    assert "**No trial records in `stopped-at-start`**" in pr_comment.render(empty, runs.oracle)


def test_the_pr_comment_command_prints_the_table_and_refuses_a_bad_link(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pr_comment.main([str(runs.oracle), "--dataset", DATASET]) == 0
    assert "### prepare · `control:oracle`" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        pr_comment.main([str(runs.oracle), "--link", "no-url-here"])
    assert refused.value.code == 2
    assert "--link 'no-url-here': expected LABEL=URL" in capsys.readouterr().err
