"""The stdio transport, wrapped and flat: a spawned ``python -m localneon`` driven by a real client."""

from __future__ import annotations

import json
from pathlib import Path

from localneon.engine.branching import Neon
from tests.localneon.helpers import call, err, ok, stdio_client, text


async def test_stdio_wrapped_session(neon: Neon) -> None:
    async with stdio_client() as client:
        tools = (await client.list_tools()).tools
        assert len(tools) >= 24
        assert all(t.input_schema.get("required") == ["params"] for t in tools)
        created = ok(await call(client, "create_project", name="stdio-project"))
        project_id = created.split()[2]
        try:
            ok(
                await call(
                    client, "run_sql", projectId=project_id, sql="CREATE TABLE t (id int); INSERT INTO t VALUES (7)"
                )
            )
            rows = json.loads(ok(await call(client, "run_sql", projectId=project_id, sql="SELECT id FROM t")))
            assert rows == [{"id": 7}]
            assert "syntax error" in err(await call(client, "run_sql", projectId=project_id, sql="SELEKT"))
        finally:
            ok(await call(client, "delete_project", projectId=project_id))
    assert neon.catalog.get_project(project_id) is None


async def test_stdio_flat_params_and_description_variant(tmp_path: Path, neon: Neon) -> None:
    variant = tmp_path / "variant.yaml"
    variant.write_text("run_sql: Variant text for run_sql.\nsearch:\n  params:\n    query: Variant param text.\n")
    async with stdio_client("--flat-params", "--descriptions", str(variant), mode="auto") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        # The variant's words, then the notice block every description carries (as on Neon).
        assert (tools["run_sql"].description or "").startswith("Variant text for run_sql.\n\n<notice>\n")
        assert tools["search"].input_schema["properties"]["query"]["description"] == "Variant param text."
        assert "migration" in (tools["prepare_database_migration"].description or "")
        schema = tools["run_sql"].input_schema
        assert "params" not in schema["properties"] and set(schema["required"]) == {"sql", "projectId"}
        created = neon.create_project("flat")
        try:
            result = await client.call_tool("run_sql", {"projectId": created.project.id, "sql": "SELECT 1 AS one"})
            assert json.loads(ok(result)) == [{"one": 1}]
            wrapped = await client.call_tool(
                "run_sql", {"params": {"projectId": created.project.id, "sql": "SELECT 1"}}
            )
            assert wrapped.is_error and "flat arguments" in text(wrapped)
        finally:
            neon.delete_project(created.project.id)
