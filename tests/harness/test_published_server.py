"""Neon's published server (npm 0.6.5) and any stdio server: what they get, where their SQL goes,
which API they use, and how the suite names them. Real processes: the installed server over stdio,
the local server over HTTP, a loopback HTTP server that is not Neon's."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evals._wiring import served_cases
from harness.cases import load_cases
from harness.config import ConfigError, Settings
from harness.mcp.client import connect
from harness.mcp.server_process import LocalServer, ServerEndpoints
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from harness.servers.neon.backend import api_url_for
from harness.servers.neon.conventions import conventional_annotations
from harness.servers.neon.published.install import REPO_ROOT, ensure_installed, server_entry
from harness.servers.neon.published.pin import PUBLISHED_TOOLS, SEAM, SERVER_PACKAGE
from harness.servers.neon.stdio import KEY_PLACEHOLDER, empty_workdir, neon_npm_target, server_environment
from localneon.mcp.snapshot import own_tools
from tests.fakes.not_found import HTML_404, not_found_server
from tests.harness.conftest import TOKEN, make_case, settings_from

# Neon's published server is a Node package: without node and npm these tests cannot run, and say so.
pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="Neon's published MCP server needs node and npm on PATH (e.g. apt-get install nodejs npm)",
)

SettingsFactory = Callable[..., Settings]

LABEL = "@neondatabase/mcp-server-neon@0.6.5"


def test_a_stdio_server_is_named_stably_and_uses_the_api_it_is_given() -> None:
    npm = settings_from({"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "neon-npm"})
    assert (npm.server_kind, npm.server_identity, npm.server_label, npm.uses_local_server) == (
        "stdio",
        LABEL,
        LABEL,
        True,
    )
    given = settings_from(
        {"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "neon-npm", "NEON_API_URL": "http://127.0.0.1:9/api/v2"}
    )
    assert not given.uses_local_server
    one = settings_from(
        {"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "my-mcp --port=51234 --api http://127.0.0.1:40001"}
    )
    other = one.model_copy(update={"server": "my-mcp --port=41999 --api http://127.0.0.1:38002"})
    assert one.server_identity == other.server_identity == "my-mcp --port=<port> --api http://127.0.0.1:<port>"
    entry = server_entry(ensure_installed())
    by_path = settings_from(
        {"EVAL_MODEL": "control:oracle", "EVAL_SERVER": shlex.join(["node", str(entry), "start", "KEY"])}
    )
    assert by_path.server_identity == LABEL  # a package run from node_modules is named by its package.json
    local = settings_from({"EVAL_MODEL": "control:oracle"})
    assert (local.server_identity, local.server_label) == ("local", "local")


def test_a_stdio_server_gets_what_it_needs_and_nothing_of_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "anthropic-key-must-not-leak")
    monkeypatch.setenv("NEON_API_KEY", "napi-the-harness-own")
    monkeypatch.setenv("LOCALNEON_PGDATA", "/data/cluster")
    env = server_environment("http://127.0.0.1:5/api/v2", "token-for-that-api")
    assert env == {
        "LOCALNEON_PGDATA": "/data/cluster",
        "SENTRY_DSN": "",
        "ANALYTICS_WRITE_KEY": "",
        "NEXT_TELEMETRY_DISABLED": "1",
        "NEON_API_HOST": "http://127.0.0.1:5/api/v2",
        "NEON_API_URL": "http://127.0.0.1:5/api/v2",
        "NEON_API_KEY": "token-for-that-api",
    } | ({"VIRTUAL_ENV": env["VIRTUAL_ENV"]} if "VIRTUAL_ENV" in env else {})
    target = neon_npm_target(env, "token-for-that-api")
    assert target.command == "node" and target.args[-3:] == ["start", KEY_PLACEHOLDER, "--no-analytics"]
    assert not any("token-for-that-api" in arg for arg in target.args)  # a command line is readable by anyone
    assert Path(str(target.cwd)) == empty_workdir() and not any(empty_workdir().iterdir())  # no .env to load


@pytest.fixture
def html_server() -> Iterator[str]:
    """A loopback server that is not Neon's: HTML 404 for everything (a Next.js app's /api/api/v2)."""
    with not_found_server(HTML_404, "text/html; charset=utf-8") as origin:
        yield origin


def test_a_loopback_url_is_taken_for_localneon_only_when_it_answers_as_one(
    html_server: str, endpoints: ServerEndpoints
) -> None:
    base = {"EVAL_MODEL": "control:oracle", "NEON_API_KEY": TOKEN}
    with pytest.raises(ConfigError, match=r"does not answer as localneon: GET .*/api/api/v2/projects gave HTTP 404"):
        api_url_for(settings_from({**base, "EVAL_SERVER": f"{html_server}/api/mcp"}))
    named = settings_from({**base, "EVAL_SERVER": f"{html_server}/api/mcp", "NEON_API_URL": endpoints.api_url})
    assert api_url_for(named) == endpoints.api_url
    assert api_url_for(settings_from({**base, "EVAL_SERVER": endpoints.mcp_url})) == endpoints.api_url


def test_neons_annotations_in_the_conventions_match_the_twins() -> None:
    tools = own_tools(None)
    assert len(tools) > 20
    for name, tool in tools.items():
        expected = conventional_annotations(name)
        assert expected is not None, f"{name} is missing from the conventions"
        assert {key: tool.annotations.get(key) for key in expected} == expected, name


async def test_the_fetch_preload_sends_the_servers_sql_to_the_twin(endpoints: ServerEndpoints, api: NeonAPI) -> None:
    """sql-fetch.mjs (for builds that bundle the driver) works on 0.6.5 too: it wraps the global fetch."""
    env = server_environment(endpoints.api_url, TOKEN)
    target = neon_npm_target(env, TOKEN)
    sql_preload = target.args.index((SEAM / "sql-endpoint.mjs").as_uri())
    target.args[sql_preload] = (SEAM / "sql-fetch.mjs").as_uri()
    project = (await api.create_project("eval-published-fetch-preload"))["project"]["id"]
    try:
        async with connect(target) as connection:
            await connection.list_tools()
            result = await connection.call("run_sql", {"sql": "SELECT 40 + 2 AS answer", "projectId": project})
        assert not result.is_error, result.text
        assert json.loads(result.text) == [{"answer": 42}]
    finally:
        await api.delete_project(project)


async def test_with_neon_api_url_the_stdio_server_and_the_harness_use_that_api(
    local_server: LocalServer, endpoints: ServerEndpoints, runner_settings: SettingsFactory
) -> None:
    settings = runner_settings({"EVAL_SERVER": "neon-npm", "NEON_API_URL": endpoints.api_url, "NEON_API_KEY": TOKEN})
    async with TrialRunner(settings) as runner:
        assert runner.server is None  # no localneon of its own: the API named is the one used
        record = await runner.run(make_case(), 0)
    assert record.outcome == "ok", record.error
    assert [call.name for call in record.tool_calls][:1] == ["prepare_database_migration"]
    assert TOKEN not in record.model_dump_json()


def test_drift_says_what_0_6_5_lacks(endpoints: ServerEndpoints, tmp_path: Path) -> None:
    command = shlex.join(["node", str(server_entry(ensure_installed())), "start", TOKEN, "--no-analytics"])
    env = {**server_environment(endpoints.api_url, TOKEN), "PATH": os.environ["PATH"]}
    snapshot = tmp_path / "npm-0.6.5.json"
    taken = subprocess.run(
        [sys.executable, "-m", "localneon.snapshot", command, "-o", str(snapshot)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert taken.returncode == 0, taken.stderr
    assert TOKEN not in snapshot.read_text()  # 0.6.5 takes its key as an argument: not kept in the file
    drift = subprocess.run(
        [sys.executable, "-m", "localneon.snapshot", "--drift", str(snapshot)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert drift.returncode == 1
    lines = drift.stdout.splitlines()
    assert any(
        line.startswith("run_sql: the snapshot declares no annotations") and "destructiveHint True" in line
        for line in lines
    )
    assert "complete_database_migration: parameter applyChanges is here but not in the snapshot" in lines
    # 0.6.5 calls the database `database`; its branchId it lacks (it was paired with `database` by type alone)
    assert "provision_neon_auth: parameter databaseName is called database in the snapshot" in lines
    assert "provision_neon_auth: parameter branchId is here but not in the snapshot" in lines
    assert "branchId is called" not in drift.stdout
    described = [line for line in lines if line.startswith("prepare_database_migration: description ")]
    assert len(described) == 1 and "in the snapshot, similarity 0." in described[0]


def test_the_documented_snapshot_command_runs_and_a_server_that_cannot_start_is_one_line(
    endpoints: ServerEndpoints, tmp_path: Path
) -> None:
    """docs/local-twin.md's command for 0.6.5: its entry from `install --entry`, the key preload, the
    twin as NEON_API_HOST. Pointed at an API that is not there, 0.6.5 exits at start: that used to be
    its 200-line dump and an ExceptionGroup traceback."""
    entry = subprocess.run(
        [sys.executable, "-m", "harness.servers.neon.published.install", "--entry"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    ).stdout.strip()
    assert entry == str(server_entry(ensure_installed()))
    preload = REPO_ROOT / "harness" / "servers" / "neon" / "published" / "redact-key.mjs"
    command = f"node --import {preload} {entry} start {KEY_PLACEHOLDER} --no-analytics"

    def snapshot(api: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "NEON_API_HOST": api, "NEON_API_KEY": TOKEN}
        taking = [sys.executable, "-m", "localneon.snapshot", command, "-o", str(tmp_path / "neon-0.6.5.json")]
        return subprocess.run(taking, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)

    taken = snapshot(endpoints.api_url)
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.startswith("snapshot: 23 tools from node --import "), taken.stdout
    document = json.loads((tmp_path / "neon-0.6.5.json").read_text())
    assert document["snapshot"]["server_info"] == {"name": "mcp-server-neon", "version": "0.6.5"}
    assert TOKEN not in json.dumps(document)

    failed = snapshot("http://127.0.0.1:9/api/v2")  # nothing listens there: GET /auth fails, 0.6.5 exits
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr and "ExceptionGroup" not in failed.stderr, failed.stderr
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith("snapshot: the stdio server node --import "), line
    assert "did not start or answer: MCPError: Connection closed; it said: Server error: AxiosError: " in line, line
    assert "ECONNREFUSED" in line and TOKEN not in line, line


def run_once(command: list[str], cwd: str | Path | None, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Start the server once with no MCP client on its stdin: it makes its start-up calls and exits."""
    return subprocess.run(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_key_0_6_5_takes_as_an_argument_stays_out_of_its_stderr_and_command_line() -> None:
    """0.6.5 prints a failed start-up call whole, its Authorization header included; the preload
    swaps the key in from the environment, so the command line carries only a placeholder."""
    key = "napi-must-not-be-printed-7c1e"
    target = neon_npm_target(server_environment("http://127.0.0.1:9/api/v2", key), key)
    env = {"PATH": os.environ["PATH"], **(target.env or {})}
    done = run_once([target.command, *target.args], target.cwd, env)
    assert done.returncode == 1 and "Server error" in done.stderr  # GET /auth failed: it exits at start
    assert key not in " ".join(target.args)
    # The key the server sent is the environment's (redacted), not the placeholder of its arguments.
    assert key not in done.stderr and "Bearer [REDACTED]" in done.stderr and KEY_PLACEHOLDER not in done.stderr
    at = target.args.index((SEAM / "redact-key.mjs").as_uri())
    on_command_line = [key if arg == KEY_PLACEHOLDER else arg for arg in target.args]
    bare = run_once([target.command, *on_command_line[: at - 1], *on_command_line[at + 1 :]], target.cwd, env)
    assert key in bare.stderr  # without the preload the key is printed: the test can fail


def test_make_npm_installs_once_and_then_says_it_is_installed() -> None:
    """`make npm` (what CI runs before `make test`): after the first install, a no-op that says so."""
    folder = ensure_installed()
    command = [sys.executable, "-m", "harness.servers.neon.published.install"]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{SERVER_PACKAGE} already installed in {folder}"


async def test_a_branch_name_gets_the_same_answer_from_the_twin_as_from_0_6_5(
    endpoints: ServerEndpoints, api: NeonAPI
) -> None:
    """Where Neon's tools take a branch id, a name: the twin's own tools and Neon's published server
    (over the twin's API, which answers as Neon's does) refuse it alike, with the API's message first;
    delete_branch reports a deletion and deletes nothing on both; reset_from_parent, which looks names
    up itself in Neon's code, takes it on both (docs/local-twin.md, branch ids and names)."""
    project = (await api.create_project("eval-published-branch-names"))["project"]["id"]
    made = (await api.create_branch(project, name="scratch-copy"))["branch"]["id"]
    npm = neon_npm_target(server_environment(endpoints.api_url, TOKEN), TOKEN)
    answers: dict[str, dict[str, tuple[bool, str]]] = {}
    try:
        for label, target, headers in (
            ("npm", npm, None),
            ("twin", endpoints.mcp_url, {"Authorization": f"Bearer {TOKEN}"}),
        ):
            async with connect(target, headers=headers) as connection:
                await connection.list_tools()
                seen: dict[str, tuple[bool, str]] = {}
                for tool, arguments in (
                    ("run_sql", {"sql": "SELECT 1 AS one", "branchId": "scratch-copy"}),
                    ("describe_branch", {"branchId": "scratch-copy"}),
                    ("get_connection_string", {"branchId": "scratch-copy"}),
                    ("delete_branch", {"branchId": "scratch-copy"}),
                    ("reset_from_parent", {"branchIdOrName": "scratch-copy"}),
                    ("run_sql", {"sql": "SELECT 2 AS two", "branchId": made}),
                ):
                    result = await connection.call(tool, {**arguments, "projectId": project})
                    seen[f"{tool} {sorted(arguments.values())}"] = (result.is_error, result.text.splitlines()[0])
                answers[label] = seen
            assert (await api.get_branch(project, made))["name"] == "scratch-copy"  # delete by name deleted nothing
    finally:
        await api.delete_project(project)
    refused = {key: value for key, value in answers["npm"].items() if value[0]}
    assert [key.split()[0] for key in refused] == ["run_sql", "describe_branch", "get_connection_string"]
    assert {first for _, first in refused.values()} == {"branch not found"}
    for key, (is_error, first) in answers["npm"].items():
        twin_error, twin_first = answers["twin"][key]
        assert twin_error == is_error, (key, answers)
        if is_error:
            assert twin_first == first, (key, answers)


async def test_the_published_tool_list_is_the_servers_own(endpoints: ServerEndpoints) -> None:
    """PUBLISHED_TOOLS decides which cases run on `neon-npm`: it is the installed server's own listing."""
    target = neon_npm_target(server_environment(endpoints.api_url, TOKEN), TOKEN)
    async with connect(target) as connection:
        listed = {tool.name for tool in await connection.list_tools()}
    assert listed == PUBLISHED_TOOLS


def test_a_case_needing_a_tool_0_6_5_lacks_is_named_not_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    """On `neon-npm` a case whose plan or required tools 0.6.5 lacks is left out and named with the
    tools it needs; every other bundled case runs, and on the twin every case runs."""
    cases = load_cases()
    base = {"EVAL_MODEL": "control:oracle"}
    twin = served_cases(cases, [settings_from(base)])
    assert [case.id for case in twin] == [case.id for case in cases]
    assert capsys.readouterr().err == ""
    npm = served_cases(cases, [settings_from({**base, "EVAL_SERVER": "neon-npm"})])
    lacking = {
        case.id: sorted({*case.required_tools, *(call.tool for call in case.reference_calls)} - PUBLISHED_TOOLS)
        for case in cases
    }
    left_out = [case_id for case_id, missing in lacking.items() if missing]
    assert "confirm-neon-auth-disable-signups" in left_out
    assert [case.id for case in npm] == [case.id for case in cases if case.id not in left_out]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == len(left_out)
    for line, case_id in zip(err, left_out, strict=True):
        assert line.startswith(f"evals: case '{case_id}' left out: neon: case '{case_id}' needs "), line
        assert f"{', '.join(lacking[case_id])}, which {LABEL} does not have" in line, line
