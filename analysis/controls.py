"""The negative-control matrix: does every deterministic score catch a careless agent everywhere?

A score that no careless agent ever fails proves nothing; a score the careful agent fails is
wrong. From one run of the control agents (`control:oracle` careful; `control:unsafe`,
`control:sloppy`, `control:obedient` careless), every record is re-scored and counted per scenario
kind, score and agent: how many scored trials failed. `separation_problems` says what is missing: a score the
careful agent failed, or one that applies to a scenario (the careful agent's trials are scored)
and that no careless agent fails on every trial of it.

    python -m analysis.controls RUN [--dataset PATH] [--careful control:oracle]

`tests/scorers/test_control_separation.py` builds the matrix from trials run in-process (fast lane);
`tests/evals/test_score_matrix.py` from a run of the CLI (long).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analysis.rescore import DETERMINISTIC_NAMES, ScoredTrial, score_run
from analysis.runs import RunInputError, load_records
from harness.cases import Case, DatasetError, load_cases

CAREFUL = "control:oracle"


def scenario_kind(case: Case) -> str:
    """The scenario, split where the safe behaviour differs: who answers, and whether it is a change
    (a migration, or a destructive step the user is asked about: delete, reset, reconfigure)."""
    if case.scenario == "complete":
        return f"complete · {case.approval}"
    if case.scenario == "tool_selection":
        if not case.is_migration and case.approval != "none":
            return f"tool_selection · destructive · {case.approval}"
        return "tool_selection · " + ("change" if case.is_migration else "read-only")
    return case.scenario


@dataclass(frozen=True)
class Cell:
    """One agent on one score in one scenario kind: failed trials out of scored ones."""

    failed: int = 0
    scored: int = 0

    def add(self, verdict: bool | None) -> Cell:
        if verdict is None:
            return self
        return Cell(self.failed + (not verdict), self.scored + 1)

    @property
    def text(self) -> str:
        return "n/a" if not self.scored else f"{self.failed}/{self.scored}"


@dataclass(frozen=True)
class Matrix:
    """cells[(kind, score)][agent]; agents with the careful one first."""

    kinds: list[str]
    scores: list[str]
    agents: list[str]
    cells: dict[tuple[str, str], dict[str, Cell]]

    def cell(self, kind: str, score: str, agent: str) -> Cell:
        return self.cells.get((kind, score), {}).get(agent, Cell())


def build_matrix(trials: Iterable[ScoredTrial], careful: str = CAREFUL) -> Matrix:
    cells: dict[tuple[str, str], dict[str, Cell]] = defaultdict(lambda: defaultdict(Cell))
    kinds: set[str] = set()
    agents: set[str] = set()
    for trial in trials:
        kind, agent = scenario_kind(trial.case), trial.record.config.model
        kinds.add(kind)
        agents.add(agent)
        for score in DETERMINISTIC_NAMES:
            cells[(kind, score)][agent] = cells[(kind, score)][agent].add(trial.verdicts[score])
    ordered = sorted(agents, key=lambda name: (name != careful, name))
    return Matrix(sorted(kinds), list(DETERMINISTIC_NAMES), ordered, {k: dict(v) for k, v in cells.items()})


def separation_problems(matrix: Matrix, careful: str = CAREFUL) -> list[str]:
    """Empty when the careful agent passes everything and each applicable score is failed, on every
    scored trial of the scenario, by at least one careless agent."""
    if careful not in matrix.agents:
        return [f"the run has no trials of the careful agent {careful}"]
    careless = [agent for agent in matrix.agents if agent != careful]
    if not careless:
        return ["the run has no careless control agent"]
    problems: list[str] = []
    for kind in matrix.kinds:
        for score in matrix.scores:
            mine = matrix.cell(kind, score, careful)
            if mine.failed:
                problems.append(f"{kind}: {careful} failed {score} on {mine.failed} of {mine.scored} trials")
            if not mine.scored:
                continue  # the score does not apply here
            others = [matrix.cell(kind, score, agent) for agent in careless]
            if not any(cell.scored and cell.failed == cell.scored for cell in others):
                shown = ", ".join(f"{agent} {cell.text}" for agent, cell in zip(careless, others, strict=True))
                problems.append(f"{kind}: no careless agent fails {score} on every trial ({shown})")
    return problems


def render_matrix(matrix: Matrix) -> str:
    """A Markdown table: one row per scenario kind and score, one column per agent, failed/scored."""
    header = ["scenario", "score", *(f"{agent} fails" for agent in matrix.agents)]
    rows = [header, ["---"] * len(header)]
    for kind in matrix.kinds:
        for score in matrix.scores:
            rows.append([kind, f"`{score}`", *(matrix.cell(kind, score, agent).text for agent in matrix.agents)])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.controls", description=__doc__.splitlines()[0])
    parser.add_argument("run", metavar="RUN", help="run folder, its trials.jsonl, or a run id under results/")
    parser.add_argument("--dataset", help="case file or folder (default: EVAL_DATASET, then the bundled cases)")
    parser.add_argument("--careful", default=CAREFUL, help=f"the agent that must pass everything (default {CAREFUL})")
    args = parser.parse_args(argv)
    try:
        _, _, records = load_records(args.run)
        cases = {case.id: case for case in load_cases(args.dataset)}
        matrix = build_matrix(score_run(records, cases), args.careful)
    except (RunInputError, DatasetError) as error:
        print(f"controls: error: {error}", file=sys.stderr)
        return 2
    print(render_matrix(matrix))
    problems = separation_problems(matrix, args.careful)
    for problem in problems:
        print(f"controls: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
