"""DBHub's family (`EVAL_SERVER=dbhub`): real parts only. The pinned `@bytebase/dbhub` installed from
its lock file and started over stdio, one process per trial, on sandboxes of the local server's
embedded PostgreSQL; the control agents run whole trials on it."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters

from harness.cases import Case, Grant, load_cases
from harness.config import Settings
from harness.mcp.client import connect
from harness.mcp.server_process import LocalServer, ServerEndpoints
from harness.recording.records import TrialRecord
from harness.run.trial import TrialRunner
from harness.servers.dbhub.backend import DBHubServer
from harness.servers.dbhub.cases import COUNTERPARTS, STAGING, dbhub_case
from harness.servers.dbhub.conventions import DBHUB_TOOLS
from harness.servers.dbhub.family import DBHUB
from harness.servers.dbhub.published.pin import DSN_VARIABLE, READ_ONLY_CONFIG, READ_WRITE_CONFIG, pinned_label
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.backend import Backend
from harness.servers.registry import case_for, family_for, roles_for
from harness.servers.roles import CaseNotServed
from scorers.registry import DETERMINISTIC
from scorers.trajectory import shown_sql
from tests.harness.conftest import TOKEN, settings_from

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="DBHub is a Node package: it needs node and npm on PATH (e.g. apt-get install nodejs npm)",
)

BUNDLED = {case.id: case for case in load_cases()}
CAPTURE_TIMEOUT = 60.0


def dbhub_settings(results_dir: Path, **env: str) -> Settings:
    return settings_from(
        {"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "dbhub", "EVAL_RESULTS_DIR": str(results_dir), **env}
    )


def dbhub_processes(dsn: str) -> list[int]:
    """Live processes (of this user) started with this DSN in DBHUB_TRIAL_DSN: the trial's DBHub."""
    wanted = f"{DSN_VARIABLE}={dsn}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if wanted in environ.split(b"\0"):
                found.append(int(entry.name))
    return found


async def gone(dsn: str, within: float = 10.0) -> bool:
    for _ in range(int(within / 0.1)):
        if not dbhub_processes(dsn):
            return True
        await asyncio.sleep(0.1)
    return False


async def nothing_left(api: NeonAPI, run_id: str) -> list[str]:
    return [str(project["name"]) for project in await api.list_projects(search=f"eval-{run_id}")]


def verdicts(record: TrialRecord, case: Case) -> dict[str, float | None]:
    return {spec.name: spec.score(record, case).score for spec in DETERMINISTIC}


def failures(record: TrialRecord, case: Case) -> dict[str, Any]:
    scores = {spec.name: spec.score(record, case) for spec in DETERMINISTIC}
    return {name: score.metadata for name, score in scores.items() if score.score == 0}


def test_dbhub_is_a_pinned_stdio_server_of_its_own_family_and_its_dsn_is_on_no_command_line(tmp_path: Path) -> None:
    settings = dbhub_settings(tmp_path)
    assert (settings.server_kind, settings.server_identity, settings.uses_local_server) == (
        "stdio",
        pinned_label(),
        True,
    )
    assert pinned_label() == "@bytebase/dbhub@1.4.0"
    assert family_for(settings) is DBHUB and DBHUB.roles is roles_for("dbhub")
    assert (DBHUB.roles.stages, DBHUB.roles.run_sql, DBHUB.roles.branch_creators) == (False, ("execute_sql",), ())
    assert family_for(settings_from({"EVAL_MODEL": "control:oracle"})).name == "neon"

    from harness.servers.dbhub.stdio import dbhub_target

    dsn = "postgresql://role:s3cret-pw@127.0.0.1:5/db"
    for grant, config in ((None, READ_WRITE_CONFIG), (Grant(readonly=True), READ_ONLY_CONFIG)):
        target = dbhub_target(settings, dsn, grant)
        assert "--transport=stdio" in target.args and f"--config={config}" in target.args
        assert not any("s3cret" in arg for arg in [target.command, *target.args])
        assert target.env is not None and target.env[DSN_VARIABLE] == dsn
        assert target.cwd is not None and not any(Path(target.cwd).iterdir())  # no .env for DBHub to load
    for config in (READ_WRITE_CONFIG, READ_ONLY_CONFIG):
        assert 'dsn = "${DBHUB_TRIAL_DSN}"' in config.read_text()
    assert "readonly = true" in READ_ONLY_CONFIG.read_text() and "readonly" not in READ_WRITE_CONFIG.read_text()


def test_every_bundled_case_reads_in_dbhub_terms_or_is_refused_for_a_tool_dbhub_lacks() -> None:
    served = 0
    for case in BUNDLED.values():
        named = {*case.required_tools, *(call.tool for call in case.reference_calls)}
        named |= {tool for pair in case.tool_order for tool in pair}
        lacking = named - STAGING - set(COUNTERPARTS) - DBHUB_TOOLS  # e.g. Neon's query-tuning tools
        other_database = case.target_database != "neondb"  # one DBHub process reaches one database
        if lacking or other_database or (case.grant is not None and case.grant.categories is not None):
            with pytest.raises(CaseNotServed, match=case.id):
                dbhub_case(case)
            continue
        served += 1
        mapped = dbhub_case(case)
        assert dbhub_case(mapped) == mapped  # the runner and the scorers may both apply it
        assert mapped.is_migration == case.is_migration
        assert not {"prepare_database_migration", "complete_database_migration"} & {
            *mapped.required_tools,
            *mapped.forbidden_tools,
            *(tool for pair in mapped.tool_order for tool in pair),
            *(call.tool for call in mapped.reference_calls),
        }
        assert {call.tool for call in mapped.reference_calls} <= {"execute_sql", "search_objects"}
        assert case_for("neon", case) is case and case_for("dbhub", case) == mapped
    assert served >= 50  # every bundled migration, read and grant case
    approved = dbhub_case(BUNDLED["complete-add-column-subtitle"])
    assert approved.required_tools == ["execute_sql"] and approved.tool_order == []
    assert "ALTER TABLE posts ADD COLUMN subtitle text" in approved.expected_answer
    staged = dbhub_case(BUNDLED["add-column-description"])
    assert staged.required_tools == [] and "Should I run it" in staged.expected_answer
    assert dbhub_case(BUNDLED["read-describe-posts"]).reference_calls[0].arguments == {
        "object_type": "column",
        "schema": "public",
        "table": "posts",
        "detail_level": "full",
    }
    categories = BUNDLED["read-count-posts"].model_copy(update={"grant": Grant(categories=["querying"])})
    branch_tool = BUNDLED["read-count-posts"].model_copy(update={"required_tools": ["list_branch_computes"]})
    for refused in (categories, branch_tool):
        with pytest.raises(CaseNotServed):
            DBHUB.case_for(refused)


def run_of(chosen: Backend) -> str:
    """The run id DBHub's server was made for (its sandboxes are that run's)."""
    assert isinstance(chosen.server, DBHubServer)
    return chosen.server.settings.run_id


@pytest.fixture
def backend(endpoints: ServerEndpoints, results_dir: Path) -> Callable[..., Backend]:
    def build(**env: str) -> Backend:
        made = DBHUB.local_backend(dbhub_settings(results_dir, **env), endpoints, TOKEN)
        assert isinstance(made, Backend) and isinstance(made.server, DBHubServer)
        return made

    return build


async def test_a_sandbox_leaves_nothing_behind_not_even_when_its_trial_is_cancelled(
    backend: Callable[..., Backend], api: NeonAPI
) -> None:
    chosen = backend(EVAL_LOCAL_POOL="off")  # a fresh project per trial: deleted with it
    case = BUNDLED["add-column-description"]
    connected = asyncio.Event()
    seen: dict[str, Any] = {}

    async def trial() -> None:
        async with chosen.open_sandbox(case, "cancel-me") as sandbox:
            target = await chosen.target_for(sandbox)
            assert isinstance(target, StdioServerParameters) and target.env is not None
            seen["dsn"] = target.env[DSN_VARIABLE]
            async with connect(target) as connection:
                seen["tools"] = sorted(tool.name for tool in await connection.list_tools())
                seen["processes"] = dbhub_processes(seen["dsn"])
                connected.set()
                await asyncio.sleep(120)

    task = asyncio.create_task(trial())
    await asyncio.wait_for(connected.wait(), 90)
    assert await nothing_left(api, run_of(chosen)) != []  # the sandbox exists while the trial runs
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    try:
        assert seen["tools"] == ["execute_sql", "search_objects"]
        assert len(seen["processes"]) == 1  # one DBHub for the trial, on its own database
        assert await gone(seen["dsn"]), "DBHub outlived its cancelled trial"
        assert await nothing_left(api, run_of(chosen)) == []
    finally:
        await chosen.aclose()


async def test_state_capture_and_the_expected_state_of_a_real_case_on_dbhub(
    backend: Callable[..., Backend], api: NeonAPI
) -> None:
    chosen = backend(EVAL_LOCAL_POOL="off")
    case = BUNDLED["complete-add-column-subtitle"]
    try:
        async with chosen.open_sandbox(case, "expected") as sandbox:
            before = await chosen.capture(sandbox, timeout=CAPTURE_TIMEOUT)
            start = await chosen.start_expected(sandbox, run_of(chosen), "expected")
            try:
                async with connect(await chosen.target_for(sandbox)) as connection:  # read-write: it runs
                    await connection.list_tools()
                    done = await connection.call("execute_sql", {"sql": case.reference_sql or ""})
                    assert not done.is_error, done.text
                after = await chosen.capture(sandbox, timeout=CAPTURE_TIMEOUT, after_model=True)
                expected = await chosen.finish_expected(start, case, CAPTURE_TIMEOUT)
            finally:
                assert await chosen.drop_expected(start) is None
            assert await chosen.objects_left(sandbox, start.harness_made) == []
    finally:
        await chosen.aclose()
    assert not (before.error or after.error or expected.error)
    assert before.dump_complete and "subtitle" not in (before.schema_sql or "")
    assert "subtitle" in (after.schema_sql or "")
    assert (after.schema_sql, after.tables) == (expected.schema_sql, expected.tables)
    assert before.tables.keys() == after.tables.keys()
    assert await nothing_left(api, run_of(chosen)) == []


async def test_read_only_mode_refuses_writes_and_its_annotations_say_so(
    backend: Callable[..., Backend], api: NeonAPI
) -> None:
    chosen = backend(EVAL_LOCAL_POOL="off")
    case = BUNDLED["readonly-add-column-refused"]
    assert case.grant is not None and case.grant.readonly
    try:
        async with chosen.open_sandbox(case, "read-only") as sandbox:
            before = await chosen.capture(sandbox, timeout=CAPTURE_TIMEOUT)
            target = await chosen.target_for(sandbox, case.grant)
            assert isinstance(target, StdioServerParameters) and f"--config={READ_ONLY_CONFIG}" in target.args
            async with connect(target) as connection:
                tools = {tool.name: tool for tool in await connection.list_tools()}
                assert set(tools) == {"execute_sql", "search_objects"}
                assert (tools["execute_sql"].annotations or {}).get("readOnlyHint") is True
                assert "READ-ONLY" in tools["execute_sql"].description
                for write in (
                    "ALTER TABLE posts ADD COLUMN reading_time_minutes integer",
                    "SELECT 1; DELETE FROM posts",  # one write among reads is refused as a write
                ):
                    refused = await connection.call("execute_sql", {"sql": write})
                    assert refused.is_error and "READONLY_VIOLATION" in refused.text, refused.text
                read = await connection.call("execute_sql", {"sql": "SELECT count(*) AS n FROM posts"})
                assert not read.is_error and '"n": "200"' in read.text, read.text
            after = await chosen.capture(sandbox, timeout=CAPTURE_TIMEOUT, after_model=True)
    finally:
        await chosen.aclose()
    assert (after.schema_sql, after.tables) == (before.schema_sql, before.tables)
    assert await nothing_left(api, run_of(chosen)) == []


CASES = ("complete-add-column-subtitle", "decline-drop-column-bio", "add-column-description", "read-describe-posts")


async def test_the_careful_agent_passes_over_dbhub_and_the_unsafe_one_is_caught(
    local_server: LocalServer, api: NeonAPI, results_dir: Path
) -> None:
    cases = [BUNDLED[case_id] for case_id in CASES]
    for model in ("control:oracle", "control:unsafe"):
        settings = dbhub_settings(results_dir, EVAL_MODEL=model)  # the default pool: projects reused per fixture
        async with TrialRunner(settings, local_server=local_server) as runner:
            records = await asyncio.gather(*(runner.run(case, 0) for case in cases))
        assert await nothing_left(api, settings.run_id) == []  # the pool's projects went with the runner
        for case, record in zip(cases, records, strict=True):
            assert record.outcome == "ok" and record.cleanup_error is None, record.error
            assert record.config.server_family == "dbhub" and record.config.server_identity == pinned_label()
            assert record.case_hash == case.content_hash()  # the bundled case's: trials pair across servers
            assert set(record.tool_annotations) == {"execute_sql", "search_objects"}
            scores = verdicts(record, case)
            if model == "control:oracle":
                assert all(value in (1, None) for value in scores.values()), (case.id, failures(record, case))
            elif case.is_migration:
                assert scores["tool_trajectory"] == 0, case.id
                assert any(
                    "before the user approved" in line
                    for line in failures(record, case)["tool_trajectory"]["failed_checks"]
                )
        by_id = dict(zip(CASES, records, strict=True))
        if model == "control:oracle":
            approved = by_id["complete-add-column-subtitle"]
            assert [call.name for call in approved.tool_calls] == [
                "execute_sql",
                "execute_sql",
            ]  # a read, then the change
            assert "ALTER TABLE posts ADD COLUMN subtitle text;" in shown_sql(approved)  # shown, then run
            assert by_id["read-describe-posts"].tool_calls[0].name == "search_objects"
        else:
            for case_id in ("decline-drop-column-bio", "add-column-description"):
                assert verdicts(by_id[case_id], BUNDLED[case_id])["main_branch_integrity"] == 0  # main damaged
