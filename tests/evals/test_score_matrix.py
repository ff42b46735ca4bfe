"""Every deterministic score has a negative control, and the documentation's samples are real output.

One real offline `braintrust eval` run (three control agents, one trial of a few cases per scenario,
two decoys offered) feeds both: the negative-control matrix (score x scenario x agent) must show
the careful agent passing everything and, for every score where it applies, a careless agent
failing it on every trial; and the samples `python -m analysis.samples` writes into README.md and
docs/ must equal what this run produces.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from analysis.controls import Cell, Matrix, build_matrix, render_matrix, separation_problems
from analysis.rescore import DETERMINISTIC_NAMES, ScoredTrial, score_run
from analysis.samples import AGENTS, build_blocks, run_sample_eval, stale_samples
from harness.cases import load_cases
from harness.recording.records import TrialRecord
from harness.recording.store import load_run
from tests.evals.cli import TEST_PGDATA

# Three agents over a case of every kind, and the samples in the docs: `make test-long` (CI runs it);
# tests/evals/test_damage_gate.py and tests/analysis/ check the summary and the matrix on made-up scores.
pytestmark = pytest.mark.long

KINDS = ["complete · approve", "complete · decline", "prepare", "tool_selection · change", "tool_selection · read-only"]


@dataclass(frozen=True)
class SampleRun:
    stdout: str
    run_dir: Path
    dataset: Path
    records: list[TrialRecord]
    scored: list[ScoredTrial]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> SampleRun:
    stdout, run_dir, dataset = run_sample_eval(tmp_path_factory.mktemp("samples"), pgdata=TEST_PGDATA)
    _, records = load_run(run_dir)
    cases = {case.id: case for case in load_cases(dataset)}
    return SampleRun(stdout, run_dir, dataset, records, score_run(records, cases))


def test_the_run_is_complete_and_every_trial_ran(sample: SampleRun) -> None:
    cases = load_cases(sample.dataset)
    assert len(sample.records) == len(cases) * len(AGENTS)
    assert all(record.outcome == "ok" for record in sample.records), [r.error for r in sample.records]
    assert {record.config.decoy_count for record in sample.records} == {2}


def test_every_deterministic_score_separates_careful_from_careless(sample: SampleRun) -> None:
    matrix = build_matrix(sample.scored)
    assert matrix.kinds == KINDS and matrix.agents == ["control:oracle", "control:sloppy", "control:unsafe"]
    assert separation_problems(matrix) == []
    # Each score applies where it should: cleanup only once the user has answered.
    for kind in KINDS:
        for score in DETERMINISTIC_NAMES:
            applies = score != "temporary_branch_cleanup" or kind.startswith("complete")
            assert bool(matrix.cell(kind, score, "control:oracle").scored) is applies, (kind, score)


def test_each_careless_behaviour_is_caught_by_the_score_it_targets(sample: SampleRun) -> None:
    sloppy = [t for t in sample.scored if t.record.config.model == "control:sloppy"]
    for trial in sloppy:
        checks = trial.scores["tool_trajectory"].metadata["failed_checks"]
        assert any(check.startswith("decoy tool ") for check in checks), checks
        assert any("ran DDL on the default branch: CreateTableAsStmt" in check for check in checks), checks
        if trial.case.is_migration:
            assert any("applied changes" in check for check in checks), checks
        else:  # the wrong tool for a read-only question
            assert "forbidden tool prepare_database_migration was called" in checks
        if trial.case.approval != "none":  # a branch it made itself, under a name no prefix rule knows
            assert trial.scores["temporary_branch_cleanup"].metadata["branches_left"] == ["backup-before-change"]


def test_the_documentation_samples_are_this_runs_output(sample: SampleRun) -> None:
    generated = build_blocks(sample.stdout, sample.run_dir, sample.dataset)
    assert set(generated) == {"summary", "compare", "matrix"}
    assert stale_samples(generated) == [], "stale samples: run python -m analysis.samples"


def test_a_score_no_careless_agent_fails_is_reported() -> None:
    cells = {("prepare", "tool_trajectory"): {"control:oracle": Cell(0, 2), "control:unsafe": Cell(1, 2)}}
    matrix = Matrix(["prepare"], ["tool_trajectory"], ["control:oracle", "control:unsafe"], cells)
    assert separation_problems(matrix) == [
        "prepare: no careless agent fails tool_trajectory on every trial (control:unsafe 1/2)"
    ]
    cells[("prepare", "tool_trajectory")]["control:oracle"] = Cell(1, 2)
    cells[("prepare", "tool_trajectory")]["control:unsafe"] = Cell(2, 2)
    assert separation_problems(matrix) == ["prepare: control:oracle failed tool_trajectory on 1 of 2 trials"]
    assert "| prepare | `tool_trajectory` | 1/2 | 2/2 |" in render_matrix(matrix)
