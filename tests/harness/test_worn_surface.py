"""The twin wears Neon's published tool surface by default: taken here from the npm server, cached,
named on `make eval`'s first line and in the experiments' metadata; without Node, the twin's own."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from braintrust_run.experiments import comparison_key, experiment_metadata
from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.servers.neon.published.pin import pinned_label
from harness.servers.neon.worn_surface import (
    OWN_LABEL,
    SurfaceChoiceError,
    choose,
    hosted_file,
    label_of,
    lacks_of,
    published_file,
    take_hosted,
    take_published,
)
from tests.evals.cli import REPO_ROOT, offline_env

needs_node = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="Neon's published MCP server needs node and npm on PATH (e.g. apt-get install nodejs npm)",
)


def _snapshot(path: Path, server: str, name: str, version: str, tools: list[str]) -> Path:
    """A snapshot document as `python -m localneon.snapshot` writes one (its header and tool names)."""
    header = {"server": server, "server_info": {"name": name, "version": version}, "taken_at": "2026-12-01T00:00:00Z"}
    entries = [{"name": tool, "description": "", "input_schema": {}, "annotations": {}} for tool in tools]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"snapshot": header, "tools": entries}), encoding="utf-8")
    return path


def test_without_node_the_twin_wears_its_own_words_and_says_why(tmp_path: Path) -> None:
    env = {"LOCALNEON_PGDATA": str(tmp_path / "pg data" / "pgdata")}
    chosen = choose(env, take=lambda path: pytest.fail("nothing is taken without node"), node=lambda: False)
    assert (chosen.label, chosen.path) == (OWN_LABEL, None)
    assert chosen.line() == "surface: localneon's own wording (no node on PATH to run Neon's published server)"
    with pytest.raises(SurfaceChoiceError, match="EVAL_SURFACE=published needs node on PATH"):
        choose({**env, "EVAL_SURFACE": "published"}, node=lambda: False)


def test_with_node_the_published_surface_is_taken_once_then_worn_from_the_cache(tmp_path: Path) -> None:
    env = {"LOCALNEON_PGDATA": str(tmp_path / "a folder with spaces" / ("long" * 30) / "pgdata")}
    taken: list[Path] = []

    def take(path: Path) -> None:
        taken.append(path)
        _snapshot(path, "node --import redact-key.mjs index.js start", "mcp-server-neon", "0.6.5", ["run_sql"])

    first = choose(env, take=take, node=lambda: True)
    again = choose(env, take=take, node=lambda: True)
    assert taken == [published_file(env)] and published_file(env).parent == tmp_path.joinpath(
        "a folder with spaces", "long" * 30, "surfaces"
    )
    assert first == again and first.label == "@neondatabase/mcp-server-neon@0.6.5" and first.path == taken[0]


def test_a_published_surface_that_cannot_be_taken_falls_back_to_the_twins_words_unless_asked_for(
    tmp_path: Path,
) -> None:
    env = {"LOCALNEON_PGDATA": str(tmp_path / "pgdata")}

    def refuse(path: Path) -> None:
        raise SurfaceChoiceError("EVAL_SURFACE: npm ci failed: ENOTFOUND registry.npmjs.org")

    chosen = choose(env, take=refuse, node=lambda: True)
    assert chosen.path is None and "could not be taken: EVAL_SURFACE: npm ci failed" in chosen.line()
    with pytest.raises(SurfaceChoiceError, match="ENOTFOUND"):
        choose({**env, "EVAL_SURFACE": "published"}, take=refuse, node=lambda: True)
    assert not published_file(env).exists()


def test_a_hosted_snapshot_is_preferred_an_own_file_wins_and_bad_settings_are_named(tmp_path: Path) -> None:
    env = {"LOCALNEON_PGDATA": str(tmp_path / "pgdata")}
    _snapshot(hosted_file(env), "https://mcp.neon.tech/mcp", "mcp-server-neon", "0.9.1", ["run_sql"])
    hosted = choose(env, take=lambda path: pytest.fail("the hosted one is cached"), node=lambda: True)
    assert hosted.label == "https://mcp.neon.tech/mcp (mcp-server-neon 0.9.1, taken 2026-12-01T00:00:00Z)"
    own = _snapshot(tmp_path / "mine.json", "python -m my_server", "my-server", "1.0", ["run_sql"])
    assert choose({**env, "LOCALNEON_SURFACE": str(own)}).label == "mine.json (my-server 1.0)"
    assert choose({**env, "EVAL_SURFACE": "own"}).path is None
    with pytest.raises(SurfaceChoiceError, match="EVAL_SURFACE='wordy': expected one of auto, published, hosted, own"):
        choose({**env, "EVAL_SURFACE": "wordy"})
    with pytest.raises(SurfaceChoiceError, match=r"LOCALNEON_SURFACE=.*gone\.json: no such file"):
        choose({**env, "LOCALNEON_SURFACE": str(tmp_path / "gone.json")})
    with pytest.raises(SurfaceChoiceError, match="make snapshot"):
        choose({"LOCALNEON_PGDATA": str(tmp_path / "elsewhere" / "pgdata"), "EVAL_SURFACE": "hosted"})


async def _tools_worn(surface: Path) -> dict[str, str]:
    """What a twin wearing `surface` lists, over MCP."""
    server = LocalServer(env={"LOCALNEON_SURFACE": str(surface)})
    endpoints = await server.start()
    try:
        async with (
            create_mcp_http_client() as http,
            Client(streamable_http_client(endpoints.mcp_url, http_client=http)) as client,
        ):
            return {tool.name: tool.description or "" for tool in (await client.list_tools()).tools}
    finally:
        server.stop()


@needs_node
def test_the_published_surface_taken_here_is_what_the_twin_then_shows(tmp_path: Path) -> None:
    """Real parts: npm's 0.6.5 against a twin, the snapshot command, a second twin wearing the file."""
    path = tmp_path / "cache" / "published.json"
    lines: list[str] = []
    take_published(path, say=lines.append)
    assert label_of(path) == pinned_label()
    document = json.loads(path.read_text(encoding="utf-8"))
    assert "twin-surface" not in path.read_text(encoding="utf-8")  # the twin's token is not kept
    neon_words = {tool["name"]: tool["description"] for tool in document["tools"]}
    lacks = lacks_of(path)
    assert "search" in lacks and not set(lacks) & set(neon_words)  # 0.6.5 has no search tool
    assert sorted(p.name for p in path.parent.iterdir() if not p.name.endswith(".lock")) == [
        "published.json",
        "published.lacks.json",
    ]  # no temp folder left
    assert lines[0].startswith(f"surface: {pinned_label()}: taking its tool surface, once")

    listed = asyncio.run(_tools_worn(path))
    first_sentence = neon_words["prepare_database_migration"].strip().split(".")[0]
    assert first_sentence and first_sentence in listed["prepare_database_migration"]
    assert listed["search"] and "search" not in neon_words  # a tool 0.6.5 lacks keeps the twin's words


def test_the_launchers_first_line_names_the_twins_own_words_when_asked(tmp_path: Path) -> None:
    """A run's first line names the surface (a whole run wearing Neon's published one, and its run.json, is
    tests/evals/test_doors.py's, through each door)."""
    env = offline_env(tmp_path / "results", EVAL_MODEL="control:oracle", EVAL_SURFACE="own")
    env.pop("LOCALNEON_SURFACE", None)
    own = subprocess.run(
        [sys.executable, "-m", "evals", "--list", "evals/eval_prepare_migration.py"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert own.stderr.splitlines()[0] == "evals: surface: localneon's own wording (EVAL_SURFACE=own)", own.stderr


def test_the_experiments_metadata_and_comparison_key_name_the_surface(tmp_path: Path) -> None:
    worn_file = _snapshot(tmp_path / "neon.json", "node index.js start", "mcp-server-neon", "0.6.5", ["run_sql"])
    base = {"EVAL_MODEL": "control:oracle"}
    wearing = Settings.from_env({**base, "LOCALNEON_SURFACE": str(worn_file)}, dotenv_path=None, warn=False)
    own = Settings.from_env(base, dotenv_path=None, warn=False)
    metadata = experiment_metadata("prepare_migration", wearing, [], 1, None)
    assert metadata["surface"] == "@neondatabase/mcp-server-neon@0.6.5"
    assert experiment_metadata("prepare_migration", own, [], 1, None)["surface"] == OWN_LABEL
    # different words measure something else: never each other's base
    assert comparison_key("prepare_migration", wearing) != comparison_key("prepare_migration", own)


def test_make_snapshot_takes_a_hosted_surface_with_the_key_and_never_keeps_it(tmp_path: Path) -> None:
    """A token-guarded twin stands in for Neon's hosted server: same MCP over Streamable HTTP."""
    hosted = LocalServer(token="hosted-key-123456789")
    endpoints = hosted.start_blocking()
    try:
        env = {"LOCALNEON_PGDATA": str(tmp_path / "pgdata"), "NEON_MCP_URL": endpoints.mcp_url}
        with pytest.raises(SurfaceChoiceError, match="make snapshot needs NEON_API_KEY"):
            take_hosted(env)
        path = take_hosted({**env, "NEON_API_KEY": "hosted-key-123456789"})
    finally:
        hosted.stop()
    assert path == hosted_file(env) and "hosted-key-123456789" not in path.read_text(encoding="utf-8")
    chosen = choose(env, take=lambda path: pytest.fail("the hosted one is cached"), node=lambda: True)
    assert chosen.label.startswith(f"{endpoints.mcp_url} (") and chosen.lacks == ()
