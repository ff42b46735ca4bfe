"""control:lexical picks tools by what their descriptions say: honest descriptions lead it to
prepare, a misleading one or a well-named decoy leads it astray, and a rerun repeats each trial."""

from __future__ import annotations

from typing import Any

import yaml

from harness.cases import Case, load_cases
from harness.mcp.toolview import DECOYS
from harness.models.control.lexical import LexicalAgent, fill_arguments, rank_tools
from harness.models.providers import TrialContext
from harness.servers.neon.answers import READER
from harness.servers.neon.conventions import ROLES
from tests.evals.cli import REPO_ROOT

DEFAULTS = yaml.safe_load((REPO_ROOT / "localneon" / "descriptions" / "default.yaml").read_text())


def _tools(overrides: dict[str, str] | None = None, decoys: int = 0) -> list[dict[str, Any]]:
    tools = []
    for name, spec in DEFAULTS.items():
        params = spec.get("params") or {}
        properties = {p: {"type": "array" if p == "sqlStatements" else "string"} for p in params}
        description = (overrides or {}).get(name, spec["description"])
        tools.append({"name": name, "description": description, "input_schema": {"properties": properties}})
    return tools + [decoy.anthropic() for decoy in DECOYS[:decoys]]


def _case(case_id: str) -> Case:
    return next(case for case in load_cases() if case.id == case_id)


async def _first_call(case: Case, tools: list[dict[str, Any]], trial_index: int = 0) -> tuple[str, dict[str, Any]]:
    agent = LexicalAgent().for_trial(TrialContext(case, "proj-1", "neondb", ROLES, READER, trial_index))
    turn = await agent.complete(
        system=None, messages=[{"role": "user", "content": case.input}], tools=tools, max_tokens=100, temperature=None
    )
    (call,) = turn.tool_uses
    return call["name"], call["input"]


async def test_honest_descriptions_lead_to_prepare_with_arguments_from_its_schema() -> None:
    case = _case("drop-column-excerpt")
    name, arguments = await _first_call(case, _tools())
    assert name == "prepare_database_migration"
    assert arguments == {"migrationSql": case.reference_sql, "projectId": "proj-1", "databaseName": "neondb"}


async def test_a_misleading_run_sql_description_leads_it_to_run_ddl_on_main() -> None:
    misleading = yaml.safe_load((REPO_ROOT / "datasets/variants/run-sql-for-schema-changes.yaml").read_text())
    case = _case("drop-column-excerpt")
    name, arguments = await _first_call(case, _tools(misleading))
    assert name == "run_sql" and arguments["sql"] == case.reference_sql


async def test_a_well_named_decoy_draws_it_away() -> None:
    case = _case("shop-alter-type-price-precision")
    assert (await _first_call(case, _tools()))[0] == "prepare_database_migration"
    name, arguments = await _first_call(case, _tools(decoys=2))
    assert name == "apply_schema_change" and arguments["ddl"] == case.reference_sql


async def test_trials_are_seeded_by_case_and_index() -> None:
    case = _case("rename-column-content-to-body")  # prepare and run_sql score nearly alike: a draw decides
    tools = _tools()
    first = [(await _first_call(case, tools, index))[0] for index in range(12)]
    again = [(await _first_call(case, tools, index))[0] for index in range(12)]
    assert first == again
    assert set(first) == {"prepare_database_migration", "run_sql"}


def test_scores_follow_the_words_and_required_arguments_are_filled() -> None:
    tools = [
        {"name": "apply_schema_change", "description": "ALTER TABLE and other DDL"},
        {"name": "list_projects", "description": "Lists projects"},
    ]
    scores = rank_tools("ALTER TABLE posts", tools)
    assert scores[0] > scores[1] == 0.0
    tool = {
        "name": "t",
        "input_schema": {
            "properties": {"statements": {"type": "array"}, "force": {"type": "boolean"}, "note": {"type": "string"}},
            "required": ["statements", "force"],
        },
    }
    context = TrialContext(_case("drop-column-excerpt"), "proj-9", "neondb", ROLES, READER)
    assert fill_arguments(tool, context, "ALTER TABLE a ADD b int; DROP TABLE c") == {
        "statements": ["ALTER TABLE a ADD b int", "DROP TABLE c"],
        "force": False,
    }
