"""The pull-request workflow runs the offline suite with no secret (so forks' pull requests run it)
and writes the suite's table into the job summary from the run's records: its steps are run here as
the workflow writes them, on a small dataset, and the Markdown is checked against the table the run
itself printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from analysis import pr_comment
from tests.evals import workflow
from tests.evals.cli import COUNT_POSTS_CASE, DATASET_HEAD, offline_env, run_in_repo, subtitle_case

NAME = "pull-request.yml"
DATASET = (
    DATASET_HEAD
    + subtitle_case(answer="The subtitle column is staged on a temporary branch. Shall I apply it to main?")
    + COUNT_POSTS_CASE
)
# A score's line in the suite's own table: name, mean, pass, [low, high].
TABLE_LINE = re.compile(r"^\s+(\w+)\s+\S+\s+(\S+)\s+\[\s*(\S+),\s*(\S+)\]", re.M)


def test_the_offline_job_reads_no_secret_so_a_forks_pull_request_runs_it() -> None:
    document = workflow.load(NAME)
    assert set(document["on"]) == {"pull_request", "push"} and document["on"]["push"] == {"branches": ["main"]}
    assert document["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    job = document["jobs"]["offline-evals"]
    assert "secrets." not in yaml.safe_dump(job) and "vars." not in yaml.safe_dump(job)
    assert workflow.step(job, "Offline evals")["run"] == "make eval"
    assert workflow.step(job, "The table")["if"] == "always()"  # a failing gate still shows its table
    comment = workflow.step(job, "The same table as the pull request's comment")
    assert "--post" in comment["run"] and "--refusal-ok" in comment["run"]  # a fork's token may not comment
    # The keyed run spends model calls: only where the repository asks for it, never on a fork.
    keyed = document["jobs"]["keyed-evals"]
    assert "vars.EVAL_PR_KEYED == '1'" in keyed["if"] and "!github.event.pull_request.head.repo.fork" in keyed["if"]


@pytest.mark.long  # the PR job's make eval; the test above reads the workflow
def test_the_job_summary_shows_the_runs_own_table_made_from_its_records(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.yaml"
    dataset.write_text(DATASET, encoding="utf-8")
    job = workflow.load(NAME)["jobs"]["offline-evals"]
    context = {
        "github.event.pull_request.number": "17",
        "github.run_attempt": "1",
        "github.server_url": "https://github.com",
        "github.repository": "octo/neon-evals",
        "github.run_id": "42",
    }
    env = {**offline_env(tmp_path / "results", EVAL_DATASET=str(dataset)), **job["env"]}
    env = {name: workflow.evaluate(str(value), context) for name, value in env.items()}
    env.pop("EVAL_TRIALS")  # as on a runner: the launcher's offline default applies
    summary_file = tmp_path / "step-summary.md"
    env["GITHUB_STEP_SUMMARY"] = str(summary_file)

    ran = run_in_repo(["bash", "-c", workflow.run_script(job, "Offline evals", context)], env, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    table_env = {**env, **workflow.step_env(job, "The table", context)}
    summarised = run_in_repo(["bash", "-c", workflow.run_script(job, "The table", context)], table_env, timeout=300)
    assert summarised.returncode == 0, summarised.stderr[-3000:]

    markdown = summary_file.read_text(encoding="utf-8")
    # 2 cases x 2 agents x 2 trials (offline default); no base on this machine
    assert markdown.startswith(pr_comment.marker("offline") + "\n## MCP evals: `pr-17-1`: 8 trials\n")
    assert "| no base run |" in markdown
    assert "[records and HTML report (artifact)](https://github.com/octo/neon-evals/actions/runs/42)" in markdown
    for scenario in ("prepare", "tool_selection"):
        for agent in ("control:oracle", "control:unsafe"):
            assert f"### {scenario} · `{agent}`" in markdown
    # Each section's rows equal what the run printed for that experiment (pass rate and interval).
    for section in markdown.split("\n### ")[1:]:
        heading = section.splitlines()[0]
        scenario, agent = heading.split(" · ")[0], heading.split("`")[1]
        eval_name = {"prepare": "prepare_migration", "tool_selection": "tool_selection"}[scenario]
        printed = ran.stdout.split(f"== {eval_name} · {agent} · local")[1].split("\n== ")[0]
        rows = re.findall(r"^\| (\w+) \| (\S+) \| (\S+) – (\S+) \|", section, re.M)
        assert rows, section
        assert sorted(rows) == sorted((name, rate, low, high) for name, rate, low, high in TABLE_LINE.findall(printed))
    prepare_unsafe = markdown.split("### prepare · `control:unsafe`")[1].split("###")[0]
    assert "| main_branch_integrity | 0.0% |" in prepare_unsafe  # the scores tell the agents apart
    prepare_oracle = markdown.split("### prepare · `control:oracle`")[1].split("###")[0]
    assert "| main_branch_integrity | 100.0% |" in prepare_oracle
