"""The lab's fast slice through the real CLI (`python -m validity --fast`): a scripted model plays the
behaviours marked `fast` over Anthropic's Messages protocol through `python -m evals`, and every verdict
agrees with every label. The same run holds the gate to each class of harm to main: for every class,
a behaviour that does it, and the run's gate counted it (the exit code and `DAMAGE:` line of the CLI
run, checked against the lab's per-trial count by the lab itself)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from analysis.rescore import rescore
from harness.cases import load_cases
from tests.evals.cli import offline_env
from validity.behaviours import BUNDLED_BEHAVIOURS, HARMS, load_behaviours
from validity.lab import lab_case, read_records
from validity.verdicts import GATE, actual_verdicts

REPO_ROOT = Path(__file__).resolve().parents[2]
CASES = {case.id: case for case in load_cases()}
FAST = [item for item in load_behaviours(BUNDLED_BEHAVIOURS, CASES) if item.fast]
MAIN_HARMS = sorted(harm for harm, to_main in HARMS.items() if to_main)


@dataclass(frozen=True)
class FastRun:
    completed: subprocess.CompletedProcess[str]
    summary: dict[str, object]
    workdir: Path


@pytest.fixture(scope="module")
def fast_run(tmp_path_factory: pytest.TempPathFactory) -> FastRun:
    workdir = tmp_path_factory.mktemp("lab") / "a workdir with spaces"
    env = offline_env(workdir / "unused")
    completed = subprocess.run(
        [sys.executable, "-m", "validity", "--fast", "--workdir", str(workdir)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith('{"validity"')]
    assert lines, completed.stdout[-2000:] + completed.stderr[-4000:]
    return FastRun(completed, json.loads(lines[-1])["validity"], workdir)


def test_every_fast_verdict_agrees_with_its_label(fast_run: FastRun) -> None:
    summary = fast_run.summary
    log = fast_run.completed.stderr[-4000:]
    assert fast_run.completed.returncode == 0, log
    assert summary["behaviours"] == len(FAST) and summary["problems"] == 0, log
    assert summary["false_alarms"] == 0 and summary["misses"] == 0, log


@pytest.mark.parametrize("harm", MAIN_HARMS)
def test_the_gate_counts_every_class_of_harm_to_main(fast_run: FastRun, harm: str) -> None:
    records = {r.case_id: r for r in read_records(fast_run.workdir / "local" / "results" / "validity" / "trials.jsonl")}
    doing_it = [item for item in FAST if harm in item.harms]
    assert doing_it, f"no fast behaviour does {harm}"
    for item in doing_it:
        verdicts = actual_verdicts(rescore(records[item.id], lab_case(item, CASES[item.case])))
        assert verdicts[GATE] is False, f"{item.id} ({harm}): the gate stayed silent"
    log = (fast_run.workdir / "local" / "run.log").read_text(encoding="utf-8")
    fails = [line for line in log.splitlines() if line.startswith("FAIL ")]
    assert fails and all("main changed without approval in" in line for line in fails), fails


def test_the_gate_stays_silent_on_the_good_behaviours(fast_run: FastRun) -> None:
    records = {r.case_id: r for r in read_records(fast_run.workdir / "local" / "results" / "validity" / "trials.jsonl")}
    good = [item for item in FAST if item.label == "good"]
    assert good
    for item in good:
        verdicts = actual_verdicts(rescore(records[item.id], lab_case(item, CASES[item.case])))
        assert verdicts[GATE] is True, item.id
