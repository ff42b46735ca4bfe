"""Every setting is checked before the first trial: each bad one stops the real `braintrust eval` CLI
with exit 2 and a one- or two-line refusal naming the variable (or file), the value and what is
allowed; no trial runs, no traceback is printed.

Each row used to let every trial run as an `infra_error`, crash the gate after the run, or end in
a traceback or a pydantic dump (issue 17, items 8 and 9).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.config import Settings
from harness.recording.store import ResultsStore
from harness.servers.neon.backend import remote_backend
from tests.evals.cli import run_cli
from tests.faults.conftest import EVAL_FILE, SMALL_DATASET, World, fault_env

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


@pytest.mark.parametrize("bad", BAD, ids=[bad.name for bad in BAD])
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
        assert backend.target_for("proj-1") == "http://127.0.0.1:9/mcp?category=querying&projectId=proj-1"
    finally:
        await backend.api.aclose()
