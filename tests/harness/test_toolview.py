"""The tool view: flat schemas for wrapped servers, overrides, decoys, seeded order, filter, hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.mcp.client import ServerTool, forward_arguments, unwrap_schema
from harness.mcp.toolview import DECOYS, ToolView, load_overrides, trial_seed

FLAT = {
    "type": "object",
    "properties": {"sql": {"type": "string"}, "projectId": {"type": "string"}},
    "required": ["sql", "projectId"],
}
WRAPPED_REF = {
    "type": "object",
    "properties": {"params": {"$ref": "#/$defs/RunSqlParams"}},
    "required": ["params"],
    "$defs": {"RunSqlParams": FLAT},
}


def server_tool(name: str, schema: dict[str, Any]) -> ServerTool:
    flat, wrapped = unwrap_schema(schema)
    return ServerTool(name, f"{name} does things.", schema, flat, wrapped)


def test_wrapped_schemas_are_unwrapped_and_arguments_wrapped_back() -> None:
    inline = {"type": "object", "properties": {"params": FLAT}, "required": ["params"]}
    for schema in (inline, WRAPPED_REF):
        tool = server_tool("run_sql", schema)
        assert tool.wrapped
        assert tool.flat_schema["properties"] == FLAT["properties"]
        assert tool.flat_schema["required"] == ["sql", "projectId"]
        assert forward_arguments(tool, {"sql": "select 1"}) == {"params": {"sql": "select 1"}}
        already = {"params": {"sql": "select 1"}}
        assert forward_arguments(tool, already) == already
    flat_tool = server_tool("run_sql", FLAT)
    assert not flat_tool.wrapped and flat_tool.flat_schema == FLAT
    assert forward_arguments(flat_tool, {"sql": "x"}) == {"sql": "x"}


def test_both_server_styles_look_the_same_to_the_model() -> None:
    wrapped = ToolView([server_tool("run_sql", WRAPPED_REF)])
    flat = ToolView([server_tool("run_sql", FLAT)])
    assert (
        wrapped.anthropic_tools()[0]["input_schema"]["properties"]
        == flat.anthropic_tools()[0]["input_schema"]["properties"]
    )


def tools() -> list[ServerTool]:
    return [
        server_tool(name, FLAT)
        for name in ("run_sql", "prepare_database_migration", "list_projects", "describe_project")
    ]


def test_overrides_decoys_filter_and_seeded_order(tmp_path: Path) -> None:
    overrides_file = tmp_path / "o.yaml"
    overrides_file.write_text("run_sql: Only for reads.\n", encoding="utf-8")
    overrides = load_overrides(overrides_file)
    view = ToolView(tools(), overrides=overrides, decoys=3, name_filter="sql|migration")
    names = [tool.name for tool in view.tools]
    assert names[:2] == ["run_sql", "prepare_database_migration"]
    assert names[2:] == [decoy.name for decoy in DECOYS[:3]]
    assert view.by_name["run_sql"].description == "Only for reads."
    assert view.decoy_count == 3 and view.kind("run_query") == "decoy" and view.kind("nope") == "unknown"
    shuffled = ToolView(tools(), decoys=3, seed=11)
    again = ToolView(tools(), decoys=3, seed=11)
    other = ToolView(tools(), decoys=3, seed=12)
    assert [t.name for t in shuffled.tools] == [t.name for t in again.tools]
    assert shuffled.hash == again.hash
    assert sorted(t.name for t in shuffled.tools) == sorted(t.name for t in other.tools)
    plain = [t.name for t in ToolView(tools(), decoys=3).tools]
    assert any([t.name for t in ToolView(tools(), decoys=3, seed=seed).tools] != plain for seed in range(5))


def test_hash_changes_with_anything_the_model_sees() -> None:
    base = ToolView(tools())
    assert base.hash == ToolView(tools()).hash
    assert base.hash != ToolView(tools(), overrides={"run_sql": "different"}).hash
    assert base.hash != ToolView(tools(), decoys=1).hash
    assert base.hash != ToolView(list(reversed(tools()))).hash


def test_decoys_never_collide_with_server_tools() -> None:
    view = ToolView([server_tool("run_query", FLAT)], decoys=2)
    assert [t.name for t in view.tools].count("run_query") == 1
    assert not view.by_name["run_query"].decoy


def test_trial_seed_differs_per_trial() -> None:
    assert trial_seed(1, "a", 0) == trial_seed(1, "a", 0)
    assert len({trial_seed(1, "a", i) for i in range(10)}) == 10


def test_a_twin_copies_a_tools_schema_under_other_words_and_is_never_forwarded() -> None:
    """`twin:<tool>` in a variant adds `<tool>_2`: the same schema, the words given, a decoy. A twin of
    a tool the view does not show (filtered out, or not the server's) is not added."""
    overrides = {"run_sql": "Runs SQL.", "twin:run_sql": "The tool for every change.", "twin:drop_everything": "x"}
    view = ToolView(tools(), overrides=overrides, name_filter="sql|migration")
    twin = view.by_name["run_sql_2"]
    assert twin.decoy and twin.description == "The tool for every change."
    assert twin.input_schema == view.by_name["run_sql"].input_schema
    assert view.kind("run_sql_2") == "decoy" and view.decoy_count == 1
    assert "drop_everything_2" not in view.by_name and "twin:run_sql" not in view.by_name
    assert view.hash != ToolView(tools(), overrides={"run_sql": "Runs SQL."}, name_filter="sql|migration").hash
    filtered = ToolView(tools(), overrides={"twin:run_sql": "x"}, name_filter="migration")
    assert "run_sql_2" not in filtered.by_name


def test_a_parameter_override_rewrites_that_parameters_words_only() -> None:
    """`<tool>.<parameter>` in a variant rewrites the description the model reads for one parameter;
    a parameter the tool lacks is left out, and the view's hash moves with the words."""
    described: dict[str, Any] = {
        "type": "object",
        "properties": {"sql": {"type": "string", "description": "SQL."}},
        "required": [],
    }
    overrides = {"run_sql.sql": "One statement; never DDL on main.", "run_sql.nope": "x"}
    view = ToolView([server_tool("run_sql", described)], overrides=overrides)
    schema = view.by_name["run_sql"].input_schema
    assert schema["properties"] == {"sql": {"type": "string", "description": "One statement; never DDL on main."}}
    assert described["properties"]["sql"]["description"] == "SQL."  # the server's schema is untouched
    assert view.by_name["run_sql"].description == "run_sql does things."
    assert view.hash != ToolView([server_tool("run_sql", described)]).hash
