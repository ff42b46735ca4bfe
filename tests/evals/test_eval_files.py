"""Running an eval file with Python applies the run gate and exit codes of `braintrust eval` (0 pass,
1 the gate failed, 2 a bad setting before anything started). What each file declares is held by
`tests/evals/test_declarations.py`.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests.evals.cli import offline_env, python_module, run_in_repo
from tests.evals.test_braintrust_uploads import ONE_CASE


@pytest.fixture
def one_case(tmp_path: Path) -> Path:
    dataset = tmp_path / "one.yaml"
    dataset.write_text(textwrap.dedent(ONE_CASE))
    return dataset


@pytest.mark.long  # a whole eval by `python evals/...`; the test above reads the files
def test_an_eval_file_run_by_python_fails_the_gate_with_exit_1(tmp_path: Path, one_case: Path) -> None:
    env = offline_env(
        tmp_path / "results",
        EVAL_MODEL="control:unsafe",  # runs the DDL on main: main_branch_integrity 0%
        EVAL_DATASET=str(one_case),
        EVAL_MIN_PASS="main_branch_integrity=1",
    )
    completed = run_in_repo([sys.executable, "evals/eval_prepare_migration.py"], env)
    assert completed.returncode == 1, completed.stderr[-3000:]
    assert "gate: FAIL" in completed.stdout
    assert "FAIL prepare_migration · control:unsafe" in completed.stderr
    assert "main_branch_integrity pass rate 0.0% (0/1) is under 100.0%" in completed.stderr


@pytest.mark.long  # three runs by `python -m evals.eval_...`
def test_an_eval_module_run_by_python_passes_with_exit_0_and_refuses_bad_settings_with_2(
    tmp_path: Path, one_case: Path
) -> None:
    env = offline_env(tmp_path / "results", EVAL_MODEL="control:oracle", EVAL_DATASET=str(one_case))
    passed = run_in_repo(python_module("evals.eval_prepare_migration"), env | {"EVAL_MIN_PASS": "tool_trajectory=1"})
    assert passed.returncode == 0, passed.stderr[-3000:]
    assert "gate: pass" in passed.stdout and "FAIL" not in passed.stderr
    refused = run_in_repo(python_module("evals.eval_prepare_migration"), env | {"EVAL_MIN_PASS": "trajectory=high"})
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "evals: stopping before any trial: EVAL_MIN_PASS: 'trajectory=high'" in refused.stderr
    assert "Traceback" not in refused.stderr
