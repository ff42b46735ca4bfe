"""Run the real `braintrust eval` CLI in a subprocess, offline, and read its JSON-lines summaries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.pgdirs import TEST_PGDATA

REPO_ROOT = Path(__file__).resolve().parents[2]
# Variables a developer's shell may hold that would change what the run measures.
_STRIPPED = ("ANTHROPIC_", "OPENAI_", "BRAINTRUST_", "EVAL_", "NEON_", "LOCALNEON_")


def offline_env(results_dir: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(_STRIPPED)}
    env.update(
        {
            "LOCALNEON_PGDATA": str(TEST_PGDATA),
            "EVAL_RESULTS_DIR": str(results_dir),
            "EVAL_JUDGE_PROVIDER": "none",
            "EVAL_TRIALS": "1",
            **extra,
        }
    )
    return env


def run_in_repo(
    command: list[str], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a command from the repository's root as a user would, capturing its text; the caller checks it."""
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def python_module(module: str, *args: str) -> list[str]:
    """The command line of `python -m module args...` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def run_cli(
    env: dict[str, str], *paths: str, timeout: float = 400, send_logs: bool = False
) -> subprocess.CompletedProcess[str]:
    """`braintrust eval --no-send-logs --terminate-on-failure --jsonl` over `paths` (default: evals/).

    `send_logs=True` leaves out `--no-send-logs`: the env must then point the SDK at a stand-in. The twin
    wears its own words unless `env` says otherwise (`EVAL_SURFACE`): these tests script models
    against them; the surface every door chooses by default is tests/evals/test_doors.py's.
    """
    env = {"EVAL_SURFACE": "own", **env}
    executable = Path(sys.executable).parent / "braintrust"
    offline = [] if send_logs else ["--no-send-logs"]
    command = [str(executable), "eval", *offline, "--terminate-on-failure", "--jsonl", "--no-progress-bars"]
    return run_in_repo([*command, *(paths or ("evals",))], env, timeout)


def run_braintrust_eval(
    env: dict[str, str], *paths: str, timeout: float = 400, send_logs: bool = False
) -> list[dict[str, Any]]:
    """Run the CLI, require success, and return the reporter's JSON lines, one per experiment."""
    completed = run_cli(env, *paths, timeout=timeout, send_logs=send_logs)
    assert completed.returncode == 0, f"braintrust eval failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-5000:]}"
    lines = [json.loads(line) for line in completed.stdout.splitlines() if line.startswith('{"experiment"')]
    assert lines, f"no summaries printed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    return lines


def eval_action_summaries(stdout: str) -> list[dict[str, Any]]:
    """The experiment summaries Braintrust's `eval-action` takes from a `--jsonl` run's stdout.

    A port of its `parseSummaryLine` (braintrustdata/eval-action `eval/src/braintrust.ts`, commit
    ebe5dbd, 2026-07-30): each JSON object line, keys turned to camelCase, counts when it has
    `experimentName` and `scores` or `metrics` (or `evaluatorName` and `errors`); others are log lines."""

    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part[:1].upper() + part[1:] for part in rest)

    found = []
    for line in stdout.splitlines():
        try:
            parsed = json.loads(line.strip())
        except ValueError:
            continue
        if not isinstance(parsed, dict):
            continue
        summary = {camel(key): value for key, value in parsed.items()}
        if ("errors" in summary and "evaluatorName" in summary) or (
            "experimentName" in summary and ("scores" in summary or "metrics" in summary)
        ):
            found.append(summary)
    return found


DATASET_HEAD = "\nversion: 1\ncases:\n"
# The read-only case several CLI tests run beside the subtitle one (a count on the blog fixture).
COUNT_POSTS_CASE = """  - id: read-count-posts
    scenario: tool_selection
    fixture: blog
    input: "How many posts are there in my {project_id} project?"
    reference_calls: [{tool: run_sql, arguments: {sql: "SELECT count(*) FROM posts"}}]
    forbidden_tools: [prepare_database_migration, complete_database_migration]
    expected_answer: "There are 200 posts."
"""
SUBTITLE_ANSWER = "I added subtitle to posts on a temporary branch. Shall I apply it to main?"


def subtitle_case(case_id: str = "add-column-subtitle", answer: str = SUBTITLE_ANSWER) -> str:
    """The prepare case many CLI tests run (a nullable text column on the blog fixture), as one YAML entry."""
    return (
        f"  - id: {case_id}\n"
        "    scenario: prepare\n"
        "    fixture: blog\n"
        '    input: "In my {project_id} project, add a subtitle column (text) to the posts table."\n'
        '    reference_sql: "ALTER TABLE posts ADD COLUMN subtitle text;"\n'
        "    target: {table: posts, column: subtitle}\n"
        "    required_tools: [prepare_database_migration]\n"
        "    forbidden_tools: [complete_database_migration]\n"
        f'    expected_answer: "{answer}"\n'
    )
