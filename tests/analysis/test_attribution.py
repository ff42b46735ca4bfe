"""Every failing trial gets one cause, read from its record and its scores. Each cause is produced here
by real trials on the local server (control agents, a scripted model over Anthropic's wire protocol, a
stdio MCP server that fails as real ones do, a model endpoint that is down), scored by the real
scorers (factuality by a fake judge over the real OpenAI protocol), then attributed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from autoevals import Score

from analysis.attribution import CASE, HARNESS, JUDGE, MODEL_SQL, MODEL_TOOL_CHOICE, SERVER, attribute, failing
from analysis.report import render_report
from analysis.rescore import DETERMINISTIC_NAMES, rescore, summarise_scored
from analysis.summary import render
from harness.cases import Case, ReferenceCall, Target
from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.recording.records import TrialRecord
from harness.run.trial import TrialRunner
from scorers.factuality import factuality
from scorers.judge_client import JudgeSettings
from tests.analysis.html_tree import parse
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    branch_id_after,
    first_user_text,
    last_tool_result,
    project_id,
    reply,
    text,
    tool_results,
    tool_use,
    user_turns,
)
from tests.fakes.not_found import refusing_server
from tests.fakes.openai_judge import FakeJudge
from tests.faults.test_server_faults import fault_command
from tests.harness.conftest import make_case

Trial = tuple[TrialRecord, Case]
FAKE_KEY = "fake-anthropic-key-attribution-0123"

# Approved changes the scripted model makes: its SQL decides the outcome.
TYPO = make_case(id="typo-phone")  # asked for `phone`, the model adds `phon`: its SQL is wrong
NO_OP = make_case(  # the case's reference changes nothing, though the user asked for a column
    id="no-op-reference-fax",
    input="In project {project_id}, add a nullable text column fax to customers.",
    reference_sql="SELECT 1",
)
LOOPING = make_case(  # the model never stops calling a tool: the turn cap ends it
    id="looping-count",
    scenario="tool_selection",
    input="In project {project_id}, how many customers are there?",
    follow_ups=[],
    approval="none",
    expected_answer="There are 3 customers.",
    reference_sql=None,
    reference_calls=[ReferenceCall(tool="run_sql", arguments={"sql": "SELECT count(*) FROM customers"})],
    expected_main="unchanged",
    required_tools=["run_sql"],
)
SERVER_FAILS = make_case(  # staged on a server whose backend refuses the staging call
    id="server-refuses-prepare",
    scenario="prepare",
    input="In project {project_id}, add a nullable text column sku to customers.",
    follow_ups=[],
    approval="none",
    expected_answer="Prepared on a temporary branch; asks before touching main.",
    reference_sql="ALTER TABLE customers ADD COLUMN sku text",
    expected_main="unchanged",
    required_tools=["prepare_database_migration"],
)
# Cases the careful control agent plays as written, whose own files are wrong.
BROKEN_REFERENCE = make_case(id="broken-reference", reference_sql="ALTER TABLE no_such_table ADD COLUMN phone text")
MISSED_TARGET = make_case(
    id="reference-misses-target",
    scenario="prepare",
    follow_ups=[],
    approval="none",
    expected_main="unchanged",
    required_tools=["prepare_database_migration"],
    target=Target(table="customers", column="email_verified"),
)


def _approved_change(body: dict[str, Any]) -> dict[str, Any]:
    """Stage the column the request names (misspelled when it is `phone`), ask, then complete it."""
    asked = first_user_text(body)
    column = "phon" if "column phone" in asked else "fax"
    sql = f"ALTER TABLE customers ADD COLUMN {column} text"
    done = [result["name"] for result in tool_results(body)]
    if not done:
        return reply(tool_use("prepare_database_migration", {"projectId": project_id(body), "migrationSql": sql}))
    if "complete_database_migration" in done:
        return reply(text("Applied to main."))
    if user_turns(body) < 2:
        return reply(text("Staged and checked on a temporary branch. Shall I apply it to main?"))
    prepared = last_tool_result(body, "prepare_database_migration")["text"]
    arguments = {
        "projectId": project_id(body),
        "migrationId": prepared.split("migrationId:")[1].split()[0],
        "migrationSql": sql,
        "databaseName": "neondb",
        "temporaryBranchId": branch_id_after("temporaryBranchId", prepared),
        "parentBranchId": branch_id_after("parentBranchId", prepared),
        "applyChanges": True,
    }
    return reply(tool_use("complete_database_migration", arguments))


def scripted(body: dict[str, Any]) -> dict[str, Any]:
    asked = first_user_text(body)
    if "how many customers" in asked:
        return reply(tool_use("get_database_tables", {"projectId": project_id(body)}))
    if "column sku" in asked:
        done = [result["name"] for result in tool_results(body)]
        if not done:
            return reply(tool_use("get_database_tables", {"projectId": project_id(body)}))
        if done == ["get_database_tables"]:
            sql = "ALTER TABLE customers ADD COLUMN sku text"
            return reply(tool_use("prepare_database_migration", {"projectId": project_id(body), "migrationSql": sql}))
        return reply(text("The server could not stage the change; nothing was changed."))
    return _approved_change(body)


def settings(results: Path, **env: str) -> Settings:
    return Settings.from_env(env={"EVAL_RESULTS_DIR": str(results), **env}, dotenv_path=None, warn=False)


async def _run(server: LocalServer | None, chosen: Settings, cases: list[Case]) -> dict[str, Trial]:
    async with TrialRunner(chosen, local_server=server) as runner:
        records = await asyncio.gather(*(runner.run(case, 0) for case in cases))
    return {case.id: (record, case) for case, record in zip(cases, records, strict=True)}


def _fake_model(url: str) -> dict[str, str]:
    return {"EVAL_MODEL": "anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": url}


@pytest.fixture(scope="module")
async def trials(
    local_server: LocalServer, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[str, Trial]]:
    """Real trials, one per behaviour, by case id (the unsafe agent's under `unsafe`); the behaviours
    run at once, each on its own runner, as a run's trials do."""
    results = tmp_path_factory.mktemp("results")

    async def careful() -> dict[str, Trial]:
        oracle = settings(results, EVAL_MODEL="control:oracle")
        return await _run(local_server, oracle, [BROKEN_REFERENCE, MISSED_TARGET, make_case()])

    async def unsafe() -> dict[str, Trial]:
        found = await _run(local_server, settings(results, EVAL_MODEL="control:unsafe"), [make_case()])
        return {"unsafe": found["add-phone"]}

    async def modelled() -> dict[str, Trial]:
        with FakeAnthropic(scripted) as fake:
            model = _fake_model(fake.url)
            found = await _run(local_server, settings(results, **model, EVAL_MAX_TURNS="6"), [TYPO, NO_OP, LOOPING])
            with refusing_server(503, b'{"message": "upstream unavailable"}') as api:
                refused = settings(
                    results, **model, EVAL_SERVER=fault_command("api-error-on", "prepare_database_migration", api)
                )
                found |= await _run(local_server, refused, [SERVER_FAILS])
            fake.assert_clean()
        return found

    async def crashed() -> dict[str, Trial]:
        dying = settings(
            results, EVAL_MODEL="control:oracle", EVAL_SERVER=fault_command("die-after-list"), EVAL_TRIAL_TIMEOUT="30"
        )
        return {"crashed": (await _run(local_server, dying, [make_case()]))["add-phone"]}

    async def endpoint_down() -> dict[str, Trial]:
        with FakeAnthropic(scripted, failures=[529] * 10) as down:
            model = settings(results, **_fake_model(down.url))
            return {"endpoint-down": (await _run(local_server, model, [make_case()]))["add-phone"]}

    async def no_sandbox() -> dict[str, Trial]:
        no_api = settings(
            results, EVAL_MODEL="control:oracle", EVAL_SERVER="http://127.0.0.1:9/mcp", NEON_API_KEY="napi-x"
        )
        return {"no-sandbox": (await _run(None, no_api, [make_case()]))["add-phone"]}

    found: dict[str, Trial] = {}
    for part in await asyncio.gather(careful(), unsafe(), modelled(), crashed(), endpoint_down(), no_sandbox()):
        found |= part
    yield found


def _attributed(trial: Trial, extra: dict[str, Score] | None = None) -> tuple[str, str]:
    record, case = trial
    scores = {**rescore(record, case).scores, **(extra or {})}
    found = attribute(record, case, scores)
    assert found is not None, (record.outcome, record.error, {n: s.score for n, s in scores.items()})
    return found.cause, found.reason


def test_a_careful_trial_that_passed_has_no_cause(trials: dict[str, Trial]) -> None:
    record, case = trials["add-phone"]
    scores = rescore(record, case).scores
    assert record.outcome == "ok" and not failing(record, scores)
    assert attribute(record, case, scores) is None


def test_ddl_on_main_through_run_sql_is_the_models_tool_choice(trials: dict[str, Trial]) -> None:
    cause, reason = _attributed(trials["unsafe"])
    assert cause == MODEL_TOOL_CHOICE
    assert reason.startswith("tool_trajectory: ") and "prepare_database_migration" in reason


def test_a_misspelled_column_applied_after_approval_is_the_models_sql(trials: dict[str, Trial]) -> None:
    record, case = trials["typo-phone"]
    scores = rescore(record, case).scores
    assert scores["tool_trajectory"].score == 1 and scores["main_branch_integrity"].score == 0  # right tools, wrong SQL
    cause, reason = _attributed(trials["typo-phone"])
    assert cause == MODEL_SQL and reason == "main_branch_integrity: main's schema differs from expected"


def test_a_model_that_never_stops_calling_tools_is_its_tool_choice(trials: dict[str, Trial]) -> None:
    record, _ = trials["looping-count"]
    assert record.outcome == "turn_cap"
    cause, reason = _attributed(trials["looping-count"])
    assert cause == MODEL_TOOL_CHOICE
    assert reason == "tool_trajectory: required tool run_sql was never called"  # the scores say more than the cap


def test_a_server_whose_backend_refuses_the_staging_call_is_the_servers(trials: dict[str, Trial]) -> None:
    record, _ = trials["server-refuses-prepare"]
    assert record.outcome == "ok", record.error  # one call answered: the trial itself ran
    assert [call.name for call in record.tool_calls] == ["get_database_tables", "prepare_database_migration"]
    cause, reason = _attributed(trials["server-refuses-prepare"])
    assert cause == SERVER
    assert reason.startswith("every prepare_database_migration call failed at the server:") and "503" in reason


def test_a_server_that_crashes_is_the_servers(trials: dict[str, Trial]) -> None:
    record, _ = trials["crashed"]
    assert record.outcome == "infra_error"
    cause, reason = _attributed(trials["crashed"])
    assert cause == SERVER and reason.startswith("the server under test failed: ")
    assert "ServerFault: the server failed tools/call prepare_database_migration (connection closed)" in reason


@pytest.mark.parametrize(
    ("trial", "kind"),
    [
        ("endpoint-down", "the model endpoint failed: "),  # Anthropic's 529 on every attempt
        ("no-sandbox", "the trial's sandbox could not be made: NeonAPIError"),
    ],
)
def test_infrastructure_that_is_not_the_servers_is_the_harnesss(
    trials: dict[str, Trial], trial: str, kind: str
) -> None:
    record, _ = trials[trial]
    assert record.outcome == "infra_error"
    cause, reason = _attributed(trials[trial])
    assert cause == HARNESS and reason.startswith(kind), reason


def test_a_reference_that_fails_on_main_is_the_cases_not_damage(trials: dict[str, Trial]) -> None:
    """The reference SQL's error is classified as the model's (a SQL error on a copy the model could
    reach), so the integrity scores read it as a sabotaged capture; nothing the model did reached it."""
    record, case = trials["broken-reference"]
    assert record.expected is not None and (record.expected.error or "").startswith("reference SQL on the start copy")
    assert rescore(record, case).scores["main_branch_integrity"].metadata.get("capture_sabotaged")
    cause, reason = _attributed(trials["broken-reference"])
    assert cause == CASE and "no_such_table" in reason


def test_a_reference_that_changes_nothing_is_the_cases(trials: dict[str, Trial]) -> None:
    record, case = trials["no-op-reference-fax"]
    scores = rescore(record, case).scores
    assert scores["tool_trajectory"].score == 1 and scores["main_branch_integrity"].score == 0
    cause, reason = _attributed(trials["no-op-reference-fax"])
    assert cause == CASE and "changes nothing" in reason


def test_a_target_the_cases_own_reference_misses_is_the_cases(trials: dict[str, Trial]) -> None:
    cause, reason = _attributed(trials["reference-misses-target"])
    assert cause == CASE and reason.endswith("does not touch its target customers.email_verified")
    # The same miss by a model whose case is right is the model's SQL.
    record, case = trials["reference-misses-target"]
    fixed = case.model_copy(update={"reference_sql": "ALTER TABLE customers ADD COLUMN email_verified boolean"})
    found = attribute(record, fixed, rescore(record, fixed).scores)
    assert found is not None and found.cause == MODEL_SQL and "touches the target" in found.reason


async def _judged(trial: Trial, judge: FakeJudge) -> Score:
    record, case = trial
    chosen = JudgeSettings("openai", judge.url, "judge-model", "fake-judge-key")
    return await factuality(record, case, settings=chosen)


async def test_only_the_judge_failing_or_erring_is_the_judges(trials: dict[str, Trial]) -> None:
    with FakeJudge(choice="D", reasons="The answer contradicts the expert.") as judge:
        disagreed = await _judged(trials["add-phone"], judge)
    assert disagreed.score == 0
    cause, reason = _attributed(trials["add-phone"], {"factuality": disagreed})
    assert cause == JUDGE and reason == "only the judge failed it: factuality 0, judge chose D"
    with FakeJudge(status=400) as refusing:
        erred = await _judged(trials["add-phone"], refusing)
    assert erred.score is None and erred.metadata.get("judge_error")
    cause, reason = _attributed(trials["add-phone"], {"factuality": erred})
    assert cause == JUDGE and reason.startswith("the judge errored (factuality): ")
    # A judge failing a trial the model already failed does not take the blame.
    assert _attributed(trials["unsafe"], {"factuality": disagreed})[0] == MODEL_TOOL_CHOICE


def test_the_summary_and_the_report_count_failures_by_cause(trials: dict[str, Trial], tmp_path: Path) -> None:
    scored = [rescore(record, case) for record, case in trials.values()]
    summary = summarise_scored(scored)
    assert summary.causes == {CASE: 3, HARNESS: 2, MODEL_TOOL_CHOICE: 2, SERVER: 2, MODEL_SQL: 1}
    table = render("attribution", summary)
    assert table.splitlines()[-1] == (
        "   failures by cause (10 failing trials): case 3, harness 2, model:tool_choice 2, server 2, model:sql 1"
    )
    page = parse(render_report({"run_id": "attribution"}, tmp_path, scored)).root
    run_line = page.one("p", **{"class": "causes"})
    assert run_line.text.startswith("Failing trials by cause: case 3, harness 2, model:tool_choice 2, server 2")
    assert "5 of them the suite's own" in run_line.text
    causes = {
        item.attrs["data-case"]: item.one("span", **{"class": "cause"}).text
        for item in page.find_all("details", **{"class": "failure"})
    }
    assert causes["broken-reference"] == CASE and causes["typo-phone"] == MODEL_SQL
    assert causes["server-refuses-prepare"] == SERVER


def test_a_scorer_the_attribution_does_not_know_is_read_by_its_metadata(trials: dict[str, Trial]) -> None:
    """A score added later (say, one comparing main's privileges) failing alone is the model's SQL, and
    a non-deterministic one unknown to the registry is the judge's when its metadata says so."""
    record, case = trials["add-phone"]
    extra = Score(name="main_privileges", score=0, metadata={"reason": "GRANT ALL ON customers TO PUBLIC"})
    assert _attributed(trials["add-phone"], {"main_privileges": extra}) == (
        MODEL_SQL,
        "main_privileges: GRANT ALL ON customers TO PUBLIC",
    )
    judged = Score(name="tone", score=0.2, metadata={"judge_template": "tone@1", "choice": "A"})
    assert _attributed(trials["add-phone"], {"tone": judged})[0] == JUDGE
    assert set(DETERMINISTIC_NAMES) <= set(rescore(record, case).scores)
