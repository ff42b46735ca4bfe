"""Every setting is checked before the first trial: each bad one stops the real `braintrust eval` CLI
with exit 2 and a one- or two-line refusal naming the variable (or file), the value and what is
allowed; no trial runs, no traceback is printed.

Each row used to let every trial run as an `infra_error`, crash the gate after the run, or end in
a traceback or a pydantic dump (issue 17, items 8 and 9).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.recording.store import ResultsStore
from harness.servers.neon.backend import remote_backend
from harness.servers.neon.sandbox import SandboxInfo
from tests.evals.cli import offline_env, run_cli
from tests.fakes.not_found import refusing_server
from tests.faults.conftest import EVAL_FILE, FAULTS_PGDATA, SMALL_DATASET, World, fault_env

STOP = "evals: stopping before any trial: "
BROKEN_FIXTURE = """
CREATE TABLE posts (id serial PRIMARY KEY, title text NOT NULL);
CREATE TABLE comments (id serial PRIMARY KEY, post_id integer REFERENCES posts, body text);
INSERT INTO reviews (post_id, body) VALUES (1, 'great');
"""


@dataclass(frozen=True)
class Bad:
    """One bad setting: what to set (given the test's folder) and what the refusal must say."""

    name: str
    setup: Callable[[Path], dict[str, str]]
    says: tuple[str, ...]
    never: tuple[str, ...] = ()


def _file(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def _broken_fixture(tmp: Path) -> dict[str, str]:
    _file(tmp, "fixtures/brokenblog.sql", BROKEN_FIXTURE)
    return {"EVAL_DATASET": _file(tmp, "cases.yaml", SMALL_DATASET.replace("fixture: blog", "fixture: brokenblog"))}


def _reused_run(tmp: Path) -> dict[str, str]:
    """A run folder of the same id made with another model: appending would make run.json lie."""
    earlier = Settings.from_env(
        env={"EVAL_MODEL": "control:unsafe", "EVAL_RESULTS_DIR": str(tmp / "results"), "EVAL_RUN_ID": "reused-run"},
        dotenv_path=None,
        warn=False,
    )
    ResultsStore(earlier.results_dir, earlier.run_id).write_run(earlier)
    return {"EVAL_MODEL": "control:oracle", "EVAL_RUN_ID": "reused-run"}


BAD = [
    Bad(
        "share with a percent sign",
        lambda _: {"EVAL_MAX_INFRA_ERRORS": "10%"},
        ("EVAL_MAX_INFRA_ERRORS='10%'", "0 to 1"),
    ),
    Bad("share in words", lambda _: {"EVAL_MAX_JUDGE_ERRORS": "ten"}, ("EVAL_MAX_JUDGE_ERRORS='ten'", "0 to 1")),
    Bad(
        "a damage switch that is neither 0 nor 1",
        lambda _: {"EVAL_ALLOW_MAIN_DAMAGE": "maybe"},
        ("EVAL_ALLOW_MAIN_DAMAGE='maybe'", "is not a switch"),
    ),
    Bad(
        "a judge timeout in words",
        lambda _: {
            "EVAL_JUDGE_PROVIDER": "openai",
            "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
            "EVAL_JUDGE_TIMEOUT": "soon",
        },
        ("EVAL_JUDGE_TIMEOUT='soon'", "a number of seconds above 0"),
    ),
    Bad("too many decoys", lambda _: {"EVAL_DECOYS": "999"}, ("EVAL_DECOYS=999", "0-12")),
    Bad(
        "a 300-character run id", lambda _: {"EVAL_RUN_ID": "r" * 300}, ("EVAL_RUN_ID is 300 characters", "at most 40")
    ),
    Bad(
        "a results folder that is a file",
        lambda tmp: {"EVAL_RESULTS_DIR": _file(tmp, "results-file", "not a folder")},
        ("EVAL_RESULTS_DIR=", "is a file; it must be a folder"),
    ),
    Bad(
        "a missing server descriptions file",
        lambda tmp: {"LOCALNEON_DESCRIPTIONS": str(tmp / "nope.yaml")},
        ("LOCALNEON_DESCRIPTIONS=", "nope.yaml: no such file"),
    ),
    Bad(
        "a missing surface file",
        lambda tmp: {"LOCALNEON_SURFACE": str(tmp / "surface.yaml")},
        ("LOCALNEON_SURFACE=", "surface.yaml: no such file"),
    ),
    Bad(
        "a dead DATABASE_URL",
        lambda _: {"DATABASE_URL": "postgresql://evals:hunter2secret@127.0.0.1:1/postgres"},
        ("DATABASE_URL=", "cannot connect"),
        ("hunter2secret",),
    ),
    Bad(
        "tool descriptions that are broken YAML",
        lambda tmp: {"EVAL_TOOL_DESCRIPTIONS": _file(tmp, "broken-descriptions.yaml", "run_sql: [unclosed\n")},
        ("EVAL_TOOL_DESCRIPTIONS:", "broken-descriptions.yaml"),
    ),
    Bad(
        "a fixture failing at its third statement",
        _broken_fixture,
        ("fixture 'brokenblog'", "brokenblog.sql", "at statement 3", 'relation "reviews" does not exist'),
    ),
    Bad(
        "an unreachable judge route",
        lambda _: {
            "EVAL_JUDGE_PROVIDER": "openai",
            "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
            "OPENAI_MAX_RETRIES": "0",
        },
        ("judge route openai", "127.0.0.1:1"),
    ),
    Bad("a zero trial timeout", lambda _: {"EVAL_TRIAL_TIMEOUT": "0"}, ("EVAL_TRIAL_TIMEOUT=0", "above 0")),
    Bad("a zero turn cap", lambda _: {"EVAL_MAX_TURNS": "0"}, ("EVAL_MAX_TURNS=0", "at least 1")),
    Bad(
        "a tool filter matching nothing",
        lambda _: {"EVAL_TOOL_FILTER": "^no_such_tool$"},
        ("EVAL_TOOL_FILTER='^no_such_tool$'", "no tool"),
    ),
    Bad(
        "a tool filter hiding every tool a case needs",
        lambda _: {"EVAL_TOOL_FILTER": "^(list_projects|describe_project)$"},
        ("EVAL_TOOL_FILTER=", "case 'fault-add-note' needs prepare_database_migration"),
    ),
    Bad("a run id reused with other settings", _reused_run, ("EVAL_RUN_ID=reused-run", "other settings", "models")),
]


# One bad setting per stage of the start checks in `make test` (the gate's limits, the results folder,
# the database, the fixtures, the tool probe, a reused run); the rest of the table in `make test-long`.
IN_MAKE_TEST = {
    "share in words",
    "a results folder that is a file",
    "a dead DATABASE_URL",
    "a fixture failing at its third statement",
    "a tool filter hiding every tool a case needs",
    "a run id reused with other settings",
}


@pytest.mark.parametrize(
    "bad", [pytest.param(bad, id=bad.name, marks=() if bad.name in IN_MAKE_TEST else pytest.mark.long) for bad in BAD]
)
def test_a_bad_setting_stops_the_run_before_any_trial(bad: Bad, world: World, dataset: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = {**fault_env(world, results, dataset, EVAL_TRIAL_TIMEOUT="60"), **bad.setup(tmp_path)}
    completed = run_cli(env, EVAL_FILE, timeout=300)
    stderr = completed.stderr
    assert completed.returncode == 2, f"exit {completed.returncode}:\n{stderr[-3000:]}"
    assert "Traceback" not in stderr and "validation error" not in stderr, stderr[-3000:]
    assert STOP in stderr, stderr[-3000:]
    refusal = stderr.split(STOP, 1)[1].strip()
    assert len(refusal.splitlines()) <= 2, refusal
    for text in bad.says:
        assert text in refusal, f"{text!r} not in {refusal!r}"
    for text in bad.never:
        assert text not in stderr
    assert not any(results.rglob("trials.jsonl")) if results.is_dir() else True, "no trial may run"
    world.assert_clean(stderr)


async def test_a_query_string_in_the_server_url_is_kept_and_merged_with_the_grant() -> None:
    settings = Settings.from_env(
        env={
            "EVAL_MODEL": "control:oracle",
            "EVAL_SERVER": "http://127.0.0.1:9/mcp?category=querying",
            "NEON_API_URL": "http://127.0.0.1:9/api/v2",
        },
        dotenv_path=None,
        warn=False,
    )
    backend = remote_backend(settings)
    try:
        assert backend.mcp_target == "http://127.0.0.1:9/mcp?category=querying"
        target = await backend.target_for(SandboxInfo("proj-1", "br-main", "main"))
        assert target == "http://127.0.0.1:9/mcp?category=querying&projectId=proj-1"
    finally:
        await backend.api.aclose()


SERVER_KEY = "napi_right_" + "k3y" * 6  # the key the keyed local server accepts
WRONG_KEY = "napi_wrong_" + "x9z" * 6


@pytest.fixture(scope="module")
async def keyed_server() -> AsyncIterator[LocalServer]:
    """The local twin, which checks keys: its MCP and API answer only to `SERVER_KEY`."""
    server = LocalServer(token=SERVER_KEY, env={"LOCALNEON_PGDATA": str(FAULTS_PGDATA)})
    await server.start()
    yield server
    server.stop()


REFUSALS = ("api-refuses", "guessed-api-refuses", "mcp-refuses")


def refused_with(refusal: str, server: LocalServer, refuser: str) -> tuple[dict[str, str], str]:
    """The settings of one refusal, and what its line must quote of it."""
    assert server.endpoints is not None
    mcp, api = server.endpoints.mcp_url, server.endpoints.api_url
    if refusal == "api-refuses":  # the run's API (NEON_API_URL) refuses the key: no probe project is made
        return {"EVAL_SERVER": mcp, "NEON_API_URL": api, "NEON_API_KEY": WRONG_KEY}, "POST /projects failed (HTTP 401)"
    if refusal == "guessed-api-refuses":  # no NEON_API_URL: the API found beside a loopback server refuses it
        return {"EVAL_SERVER": mcp, "NEON_API_KEY": WRONG_KEY}, "/api/v2/projects gave HTTP 401"
    # the API takes the key, the MCP server refuses it
    given = {"EVAL_SERVER": f"{refuser}/mcp", "NEON_API_URL": api, "NEON_API_KEY": SERVER_KEY}
    return given, "the server refused initialize: HTTP 401"


@pytest.mark.parametrize(  # the API's refusal in `make test`; the guessed API's and the MCP server's in test-long
    "refusal", [REFUSALS[0], *(pytest.param(refusal, marks=pytest.mark.long) for refusal in REFUSALS[1:])]
)
def test_a_server_refusing_the_key_stops_the_run_before_any_trial(
    refusal: str, keyed_server: LocalServer, world: World, dataset: Path, tmp_path: Path
) -> None:
    """A wrong NEON_API_KEY used to run every trial as an `infra_error` (HTTP 401 each), or to stop with
    advice to set NEON_API_URL; now one line names the server, its refusal and the variable."""
    results = tmp_path / "results"
    with refusing_server(401, b'{"error": "invalid_token"}') as refuser:
        given, says = refused_with(refusal, keyed_server, refuser)
        env = {**fault_env(world, results, dataset, EVAL_MODEL="control:oracle"), **given}
        completed = run_cli(env, EVAL_FILE, timeout=300)
    stderr = completed.stderr
    assert completed.returncode == 2, f"exit {completed.returncode}:\n{stderr[-3000:]}"
    assert "Traceback" not in stderr and "infrastructure error" not in stderr, stderr[-3000:]
    refusal_line = stderr.split(STOP, 1)[1].strip()
    assert len(refusal_line.splitlines()) == 1, refusal_line
    server = given["EVAL_SERVER"]
    assert refusal_line.startswith(f"EVAL_SERVER={server} refused authentication ("), refusal_line
    assert says in refusal_line and "NEON_API_KEY" in refusal_line, refusal_line
    assert WRONG_KEY not in stderr and SERVER_KEY not in stderr
    assert not any(results.rglob("trials.jsonl")) if results.is_dir() else True, "no trial may run"
    world.assert_clean(stderr)


def pool_setup(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m harness.pool setup` (what `make pool` runs) from `cwd`, whose `.env` it reads."""
    command = [sys.executable, "-m", "harness.pool", "setup"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_make_pool_without_a_key_names_the_variable_and_where_to_set_it(tmp_path: Path) -> None:
    """It used to call Neon's API without a key and end in a NeonAPIError traceback."""
    (tmp_path / ".env").write_text("NEON_API_KEY=\n")  # as `cp .env.example .env` leaves it
    done = pool_setup(offline_env(tmp_path / "results"), tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("pool: NEON_API_KEY is not set: "), lines[0]
    assert "set NEON_API_KEY in .env" in lines[0] and "https://console.neon.tech/api/v2" in lines[0], lines[0]


def test_make_pool_with_a_refused_key_says_so_in_one_line(keyed_server: LocalServer, tmp_path: Path) -> None:
    assert keyed_server.endpoints is not None
    env = offline_env(tmp_path / "results", NEON_API_URL=keyed_server.endpoints.api_url, NEON_API_KEY=WRONG_KEY)
    done = pool_setup(env, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and WRONG_KEY not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("pool: NEON_API_KEY was refused: Neon API GET /projects failed (HTTP 401)"), lines[0]
    assert "invalid bearer token" in lines[0] and ".env" in lines[0], lines[0]
