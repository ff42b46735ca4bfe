"""What every server family must do, checked the same way for each row of the registry.

A family is two things (`harness/servers/registry.py`): leaf terms the scorers read (tool roles, a
case in its terms) and machinery the runner drives (sandboxes, captures, the expected state, MCP
targets). This test holds both to one contract on real parts: the family's own server, started as a
trial would start it, on sandboxes of the local server's embedded PostgreSQL. A new family passes
this file before anything else (docs/servers.md, "Adding a family").
"""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from harness.cases import Case, load_cases
from harness.mcp.client import connect
from harness.mcp.server_process import LocalServer, ServerEndpoints
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from harness.servers.registry import FAMILIES, FamilyRow, case_for, family_for, family_named, roles_for, row_named
from harness.servers.roles import CaseNotServed
from scorers.registry import DETERMINISTIC
from tests.harness.conftest import TOKEN, settings_from

BUNDLED = load_cases()
CAPTURE_TIMEOUT = 60.0
NEEDS_NODE = {"dbhub"}  # families whose server is a Node package
SERVER_OF = {"neon": "local", "dbhub": "dbhub"}  # the EVAL_SERVER a family's trials run on here


def _rows() -> list[object]:
    return [
        pytest.param(
            row,
            id=row.name,
            marks=pytest.mark.skipif(
                row.name in NEEDS_NODE and (shutil.which("node") is None or shutil.which("npm") is None),
                reason=f"{row.name}'s server is a Node package: it needs node and npm on PATH",
            ),
        )
        for row in FAMILIES
    ]


def _served(row: FamilyRow) -> list[Case]:
    served = []
    for case in BUNDLED:
        try:
            served.append(case_for(row.name, case))
        except CaseNotServed:
            continue
    return served


def test_every_row_of_the_table_has_a_server_here() -> None:
    assert {row.name for row in FAMILIES} == set(SERVER_OF), "a new family needs its EVAL_SERVER here"


@pytest.mark.parametrize("row", _rows())
def test_the_rows_terms_are_the_machinerys_own(row: FamilyRow) -> None:
    """The scorers read the row; the runner drives the machinery: they must not disagree."""
    family = family_named(row.name)
    assert family.name == row.name and family.roles == row.roles == roles_for(row.name)
    assert row.roles.family == row.name
    for server in row.servers:
        assert family_for(settings_from({"EVAL_SERVER": server})).name == row.name, server
    here = settings_from({"EVAL_MODEL": "control:oracle", "EVAL_SERVER": SERVER_OF[row.name]})
    assert family_for(here).name == row.name
    served = 0
    for case in BUNDLED:
        try:
            mapped = family.case_for(case)
        except CaseNotServed:
            with pytest.raises(CaseNotServed):
                case_for(row.name, case)
            continue
        served += 1
        assert case_for(row.name, case) == mapped, case.id
    assert served, f"{row.name} serves none of the bundled cases"


def test_an_unknown_family_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match=r"no server family 'sqlite' \(known: neon, dbhub\)"):
        row_named("sqlite")
    with pytest.raises(ValueError, match="no server family 'sqlite'"):
        roles_for("sqlite")


@pytest.mark.parametrize("row", _rows())
async def test_a_sandbox_serves_the_roles_tools_captures_main_and_leaves_nothing(
    row: FamilyRow, endpoints: ServerEndpoints, tmp_path: Path, api: NeonAPI
) -> None:
    """Open a sandbox for a case that changes main; its server lists every tool the roles name; the
    expected state (the reference applied to a copy) equals main after the harness applies the same
    SQL itself; the copy and the sandbox are gone afterwards."""
    case = next(case for case in _served(row) if case.expected_main == "changed" and case.reference_sql)
    settings = settings_from(
        {
            "EVAL_MODEL": "control:oracle",
            "EVAL_SERVER": SERVER_OF[row.name],
            "EVAL_RESULTS_DIR": str(tmp_path / "results"),
            "EVAL_LOCAL_POOL": "off",
        }
    )
    backend = family_for(settings).local_backend(settings, endpoints, TOKEN)
    named = {*row.roles.stage, *row.roles.apply, *row.roles.run_sql}
    try:
        async with backend.open_sandbox(case, "contract") as sandbox:
            before = await backend.capture(sandbox, timeout=CAPTURE_TIMEOUT)
            start = await backend.start_expected(sandbox, settings.run_id, "contract")
            try:
                async with connect(await backend.target_for(sandbox), backend.mcp_headers) as connection:
                    listed = {tool.name for tool in await connection.list_tools()}
                with psycopg.connect(await backend.connection_uri(sandbox), autocommit=True) as conn:
                    conn.execute(case.reference_sql or "")
                after = await backend.capture(sandbox, timeout=CAPTURE_TIMEOUT, after_model=True)
                expected = await backend.finish_expected(start, case, CAPTURE_TIMEOUT)
            finally:
                assert await backend.drop_expected(start) is None
            assert await backend.objects_left(sandbox, start.harness_made) == []
    finally:
        await backend.aclose()
    assert named and named <= listed, f"{row.name}'s server lacks tools its roles name: {sorted(named - listed)}"
    assert not (before.error or after.error or expected.error), (before.error, after.error, expected.error)
    assert before.dump_complete and before.schema_sql != after.schema_sql
    assert (after.schema_sql, after.tables) == (expected.schema_sql, expected.tables)
    left = [str(project["name"]) for project in await api.list_projects(search=f"eval-{settings.run_id}")]
    assert left == [], f"{row.name} left its sandbox behind: {left}"


@pytest.mark.parametrize("row", _rows())
async def test_the_control_agents_play_the_family_by_its_roles(
    row: FamilyRow, local_server: LocalServer, tmp_path: Path, api: NeonAPI
) -> None:
    """The scripted agents name no family's tools: they act by the roles and read answers with the
    reader the family gives each trial. So the careful one passes a change the user approves on any
    family, and the one that runs the change at once is caught by the trajectory check."""
    case = next(case for case in _served(row) if case.approval == "approve" and case.reference_sql)
    for model in ("control:oracle", "control:unsafe"):
        settings = settings_from(
            {"EVAL_MODEL": model, "EVAL_SERVER": SERVER_OF[row.name], "EVAL_RESULTS_DIR": str(tmp_path / model)}
        )
        async with TrialRunner(settings, local_server=local_server) as runner:
            record = await runner.run(case, 0)
        assert record.outcome == "ok" and record.cleanup_error is None, record.error
        assert record.config.server_family == row.name
        scores = {spec.name: spec.score(record, case).score for spec in DETERMINISTIC}
        if model == "control:oracle":
            assert all(value in (1, None) for value in scores.values()), (row.name, scores)
        else:
            assert scores["tool_trajectory"] == 0, (row.name, scores)
    left = [str(project["name"]) for project in await api.list_projects(search=f"eval-{settings.run_id}")]
    assert left == []
