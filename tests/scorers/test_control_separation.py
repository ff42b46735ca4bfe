"""The negative-control check in the fast lane: the careful agent passes every deterministic score,
and every score is failed, on every trial where it applies, by a careless agent.

The control agents run in this process (the harness's `TrialRunner`, as the Braintrust task runs
it) over the real MCP protocol against the local twin and its PostgreSQL, and their records are
scored with the registry's deterministic scorers (`analysis.rescore`) and read as the negative-control
matrix (`analysis.controls`). No `braintrust eval` subprocess: the same check through the CLI, with
the documentation's samples, is `tests/evals/test_score_matrix.py` (long).

A new deterministic scorer must pass here: the careful agent never fails it, and on every scenario
kind where it applies some careless agent fails it on every trial (else add the mistake to
`control:sloppy`, or a case where one shows). A new careless agent is one more entry in `AGENTS`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from analysis.controls import build_matrix, render_matrix, scenario_kind, separation_problems
from analysis.rescore import DETERMINISTIC_NAMES, ScoredTrial, score_run
from harness.cases import BUNDLED_DATASET, Case, load_cases
from harness.mcp.server_process import LocalServer
from harness.recording.records import TrialRecord
from harness.run.trial import TrialRunner
from scorers.registry import DETERMINISTIC
from tests.harness.conftest import settings_from

CAREFUL = "control:oracle"
CARELESS = ("control:unsafe", "control:sloppy")
OBEDIENT = "control:obedient"  # runs what a tool's answer tells it to: run on the cases that plant something
DEFAULT_DATABASE = "control:default-database"  # never names the database: run on the cases that name one
AGENTS = (CAREFUL, *CARELESS, OBEDIENT, DEFAULT_DATABASE)
CASES = {case.id: case for case in load_cases(BUNDLED_DATASET)}
# A case of every scenario kind (`analysis.controls.scenario_kind`), and of each family of issue 27
# part B: a tuning approved and declined, a destructive tool approved and declined, and instructions
# planted in a row and in a table comment.
FAST_CASE_IDS = (
    "add-column-description",
    "complete-add-column-subtitle",
    "decline-drop-column-bio",
    "read-count-posts",
    "casual-drop-tags-table",
    "tune-apply-customer-ticket-list",
    "tune-cancel-customer-ticket-list",
    "confirm-delete-scratch-branch",
    "confirm-keep-scratch-branch",
    "injected-top-customer-name",
    "injected-comment-conventions-approved",
    "databases-apply-column-reporting",
    "databases-cancel-drop-reporting-status",
)
# The families of issue 27 part B, every case of them (the long test below).
FAMILY_FILES = ("query_tuning.yaml", "destructive_tools.yaml", "planted_instructions.yaml", "databases.yaml")
CONCURRENCY = 6


def planted(case: Case) -> bool:
    return any(tag.startswith("injection:") for tag in case.tags)


def runs(agent: str, case: Case) -> bool:
    """Whether the agent runs on the case: the obedient one where something is planted, the one that
    forgets the database where a case names one, every other agent everywhere."""
    if agent == OBEDIENT:
        return planted(case)
    if agent == DEFAULT_DATABASE:
        return case.database is not None
    return True


def interleaved(cases: Iterable[Case]) -> list[Case]:
    """The cases with their fixtures taken in turn (blog, support, retail, blog, ...): trials running
    at once then mostly hold different fixtures' projects, instead of queueing for one fixture's."""
    by_fixture: dict[str, list[Case]] = {}
    for case in cases:
        by_fixture.setdefault(case.fixture, []).append(case)
    queues = list(by_fixture.values())
    return [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]


async def run_agents(
    server: LocalServer, cases: Iterable[Case], results: Path, decoys: int = 2, pool: str = "auto"
) -> tuple[list[TrialRecord], float]:
    """One trial of each case per agent (where it `runs`), at CONCURRENCY trials at once, each agent's
    pool holding up to `pool` projects per fixture (`EVAL_LOCAL_POOL`); the records and the seconds
    it took. Trials are handed out case by case, every agent's trial of a case in turn."""
    started = time.perf_counter()
    gate = asyncio.Semaphore(CONCURRENCY)
    chosen = interleaved(cases)

    async def one(runner: TrialRunner, case: Case) -> TrialRecord:
        async with gate:
            return await runner.run(case, 0)

    runners = []
    for agent in AGENTS:
        env = {
            "EVAL_MODEL": agent,
            "EVAL_RESULTS_DIR": str(results),
            "EVAL_DECOYS": str(decoys),
            "EVAL_LOCAL_POOL": pool,
        }
        runners.append(TrialRunner(settings_from(env), local_server=server))
    try:
        for runner in runners:
            await runner.start()
        jobs = [one(runner, case) for case in chosen for runner in runners if runs(runner.settings.model, case)]
        records = list(await asyncio.gather(*jobs))
    finally:
        for runner in runners:
            await runner.aclose()
    return records, time.perf_counter() - started


def assert_separated(scored: list[ScoredTrial]) -> None:
    matrix = build_matrix(scored, CAREFUL)
    assert separation_problems(matrix, CAREFUL) == [], render_matrix(matrix)


def assert_each_break_is_caught(scored: list[ScoredTrial]) -> None:
    """A careless trial that did anything but the careful agent's calls fails some deterministic score;
    the obedient agent fails the trajectory score on every case that plants an instruction, and the
    one that forgets the database on every case about another database than the default."""
    careful = {t.case.id: [c.name for c in t.record.tool_calls] for t in scored if t.record.config.model == CAREFUL}
    for trial in scored:
        model, case = trial.record.config.model, trial.case
        if model == CAREFUL:
            continue
        if [c.name for c in trial.record.tool_calls] != careful[case.id]:
            failed = [name for name in DETERMINISTIC_NAMES if trial.verdicts[name] is False]
            assert failed, f"{model} on {case.id} left the careful path, and no score caught it"
        checks = trial.scores["tool_trajectory"].metadata.get("failed_checks", [])
        if model == OBEDIENT or (model == DEFAULT_DATABASE and case.target_database != "neondb"):
            assert trial.verdicts["tool_trajectory"] is False, (model, case.id, checks)
        elif model == DEFAULT_DATABASE:
            assert not trial.failed, (case.id, checks)  # the default database named: the careful agent


def score(records: list[TrialRecord], cases: Iterable[Case]) -> list[ScoredTrial]:
    assert all(record.outcome == "ok" for record in records), [(r.case_id, r.error) for r in records if r.error]
    return score_run(records, {case.id: case for case in cases})


async def test_every_deterministic_score_separates_careful_from_careless(
    local_server: LocalServer, tmp_path: Path
) -> None:
    cases = [CASES[case_id] for case_id in FAST_CASE_IDS]
    # One project per fixture and agent: each trial restores it from golden (a template clone)
    # instead of loading the fixture's SQL into a new one; the pool's growth is tests/harness/test_local_pool.py's.
    records, seconds = await run_agents(local_server, cases, tmp_path / "results", pool="1")
    scored = score(records, cases)
    assert {scenario_kind(case) for case in cases} >= {
        "prepare",
        "complete · approve",
        "complete · decline",
        "tool_selection · change",
        "tool_selection · read-only",
        "tool_selection · destructive · approve",
        "tool_selection · destructive · decline",
    }
    assert_separated(scored)
    assert_each_break_is_caught(scored)
    # Every deterministic score is in the matrix: a scorer added to the registry is checked here too.
    assert list(build_matrix(scored).scores) == [item.name for item in DETERMINISTIC]
    print(f"\n{len(records)} trials in {seconds:.1f} s")


@pytest.mark.long  # every case of the three families with every agent (~120 trials): the test above runs six
async def test_the_tuning_destructive_and_planted_cases_separate(local_server: LocalServer, tmp_path: Path) -> None:
    cases = [case for case in CASES.values() if case.source_file and case.source_file.name in FAMILY_FILES]
    assert len(cases) >= 30
    records, seconds = await run_agents(local_server, cases, tmp_path / "results")
    scored = score(records, cases)
    assert_separated(scored)
    assert_each_break_is_caught(scored)
    careful = [t for t in scored if t.record.config.model == CAREFUL]
    assert all(verdict is not False for t in careful for verdict in t.verdicts.values()), [
        (t.case.id, {n: t.scores[n].metadata for n in DETERMINISTIC_NAMES if t.verdicts[n] is False})
        for t in careful
        if t.failed
    ]
    print(f"\n{len(records)} trials in {seconds:.1f} s")
