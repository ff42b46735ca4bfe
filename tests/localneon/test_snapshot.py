"""Snapshots of a server's tool surface: taken over real transports, worn by a second server, compared."""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localneon.mcp.snapshot import main as snapshot_main
from localneon.mcp.surface import SurfaceTool, tool_drift
from tests.localneon.conftest import REPO, _spawn_http
from tests.localneon.helpers import HttpServer, http_client


def snapshot_cli(*args: str, token: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SNAPSHOT_TEST_TOKEN": token}
    command = [sys.executable, "-m", "localneon.snapshot", "--token-env", "SNAPSHOT_TEST_TOKEN", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)


Snapshot = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def snapshot_here(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Snapshot:
    """The same command in this process (`snapshot_cli` starts Python and its imports each time: a
    second of CPU a call, and the entry point is already run by the calls that take a snapshot)."""

    def run(*args: str, token: str) -> subprocess.CompletedProcess[str]:
        monkeypatch.setenv("SNAPSHOT_TEST_TOKEN", token)
        capsys.readouterr()
        code = snapshot_main(["--token-env", "SNAPSHOT_TEST_TOKEN", *args])
        shown = capsys.readouterr()
        return subprocess.CompletedProcess(["localneon.snapshot", *args], code, shown.out, shown.err)

    return run


def tool(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in document["tools"] if t["name"] == name)


def test_snapshot_worn_by_a_second_server_and_drift(
    http_server: HttpServer, tmp_path: Path, snapshot_here: Snapshot
) -> None:
    taken = tmp_path / "local.json"
    done = snapshot_cli(http_server.mcp_url, "-o", str(taken), token=http_server.token)
    assert done.returncode == 0, done.stderr
    text = taken.read_text()
    assert http_server.token not in text
    document = json.loads(text)
    assert tool(document, "run_sql")["annotations"]["destructiveHint"] is True
    assert "sql" in tool(document, "run_sql")["input_schema"]["properties"]["params"]["properties"]

    stdio = snapshot_cli(shlex.join([sys.executable, "-m", "localneon", "--transport", "stdio"]), token="")
    assert stdio.returncode == 0, stdio.stderr
    assert [t["name"] for t in json.loads(stdio.stdout)["tools"]] == [t["name"] for t in document["tools"]]

    worn = copy.deepcopy(document)
    tool(worn, "run_sql")["description"] = "Worn words for run_sql, as production shows them."
    surface = tmp_path / "worn.json"
    surface.write_text(json.dumps(worn))
    token = "second-" + os.urandom(6).hex()
    proc, info = _spawn_http(tmp_path, f"--token={token}", f"--surface={surface}")
    try:
        second = info["mcp_url"]
        assert snapshot_here("--drift", str(surface), second, token=token).stdout == ""
        own = snapshot_here("--drift", str(surface), token="")
        # Worn words are drift a person can read (lengths, similarity, where they part), not a failure.
        [line] = own.stdout.splitlines()
        assert own.returncode == 0 and line.startswith("run_sql: description "), own.stdout + own.stderr
        assert "in the snapshot, similarity 0." in line and "first differs at char 0" in line
        assert "1 descriptions differ" in own.stderr

        renamed = copy.deepcopy(document)
        params = tool(renamed, "run_sql")["input_schema"]["properties"]["params"]
        params["properties"]["query"] = params["properties"].pop("sql")
        params["required"] = ["query" if p == "sql" else p for p in params["required"]]
        (tmp_path / "renamed.json").write_text(json.dumps(renamed))
        drift = snapshot_here("--drift", str(tmp_path / "renamed.json"), second, token=token)
        assert drift.returncode == 1
        renaming, wording = drift.stdout.splitlines()  # the second server wears the worn run_sql words
        assert renaming == "run_sql: parameter sql is called query in the snapshot"
        assert wording.startswith("run_sql: description 49 chars here, ")
    finally:
        proc.terminate()
        proc.wait(15)


async def test_worn_surface_shows_the_snapshot_words(tmp_path: Path, http_server: HttpServer) -> None:
    surface = tmp_path / "s.json"
    entry = {
        "name": "run_sql",
        "description": "Production words.\n\n<notice>\nNotice: a notice seen when the snapshot was taken.\n</notice>",
        "input_schema": {"type": "object", "properties": {"sql": {"type": "string", "description": "Worn sql."}}},
        "annotations": {"title": "Worn Title"},
    }
    surface.write_text(json.dumps({"snapshot": {"server": "https://example.test/mcp"}, "tools": [entry]}))
    proc, info = _spawn_http(tmp_path, f"--token={http_server.token}", f"--surface={surface}")
    try:
        server = HttpServer(info["url"], info["mcp_url"], info["api_url"], http_server.token)
        async with http_client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
    finally:
        proc.terminate()
        proc.wait(15)
    run_sql = tools["run_sql"]
    assert (run_sql.description or "").startswith("Production words.\n\n<notice>\nNotice: write mode")
    assert "seen when the snapshot was taken" not in (run_sql.description or "")
    assert run_sql.input_schema["properties"]["params"]["properties"]["sql"]["description"] == "Worn sql."
    assert run_sql.annotations and run_sql.annotations.title == "Worn Title"
    assert run_sql.annotations.destructive_hint is True
    assert tools["list_projects"].annotations and tools["list_projects"].annotations.title == "List Projects"


def test_bad_surface_file_is_named(tmp_path: Path, snapshot_here: Snapshot) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"tools": [{"name": 3}]}')
    done = snapshot_here("--drift", str(bad), token="")
    assert done.returncode == 2 and "bad.json: tools[0]" in done.stderr


def test_a_renamed_parameter_is_paired_with_the_most_alike_name() -> None:
    """0.6.5's provision_neon_auth has `database` where the twin has `branchId` and `databaseName`
    (both strings): paired by type in order, the report said `branchId is called database`."""
    text = {"type": "string"}
    here = {"projectId": text, "branchId": text, "databaseName": text}
    ours = SurfaceTool("provision_neon_auth", "", {"properties": here}, {})
    theirs = SurfaceTool("provision_neon_auth", "", {"properties": {"projectId": text, "database": text}}, {})
    assert tool_drift("provision_neon_auth", ours, theirs) == [
        "provision_neon_auth: parameter databaseName is called database in the snapshot",
        "provision_neon_auth: parameter branchId is here but not in the snapshot",
    ]
    # Unlike names of one type are still a rename when nothing closer is there (run_sql's sql / query).
    sql = SurfaceTool("run_sql", "", {"properties": {"sql": text}, "required": ["sql"]}, {})
    query = SurfaceTool("run_sql", "", {"properties": {"query": text}, "required": ["query"]}, {})
    assert tool_drift("run_sql", sql, query) == ["run_sql: parameter sql is called query in the snapshot"]
