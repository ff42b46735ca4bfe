"""One notion of "logged in" (issue 25, item 2): `braintrust eval --api-key K` turns on every Braintrust
feature of the suite the variable turns on (base lookup, git info, lean uploads, the gateway judge,
the lost-upload check), and `.env`, `.env.braintrust` and the CLI's flags are read as the SDK reads them.

The CLI tests run the real `braintrust eval` against the recording stand-in of Braintrust's API.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from braintrust_run import login
from braintrust_run.login import CliFlags, adopt_cli_login, braintrust_api_key, cli_flags, load_suite_env, sending_logs
from tests.evals.cli import offline_env, run_in_repo
from tests.evals.test_braintrust_uploads import ONE_CASE
from tests.fakes.braintrust_server import API_KEY, FakeBraintrust

EVAL_FILE = "evals/eval_prepare_migration.py"
LEAN_SCORE_INPUT = {"case_id", "trial_index", "trial_key"}


def braintrust_eval(env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    cli = str(Path(sys.executable).parent / "braintrust")
    command = [cli, "eval", "--terminate-on-failure", "--jsonl", "--no-progress-bars", *flags, EVAL_FILE]
    return run_in_repo(command, env, timeout=400)


def keyed_env(results: Path, dataset: Path, braintrust: FakeBraintrust, *, variable: bool) -> dict[str, str]:
    """The stand-in's URLs, the judge on its default route (the gateway when a key is known), and the
    key as the variable or not at all."""
    env = offline_env(results, EVAL_MODEL="control:oracle", EVAL_DATASET=str(dataset), **braintrust.env())
    env.pop("EVAL_JUDGE_PROVIDER")
    if not variable:
        env.pop("BRAINTRUST_API_KEY")
    return env


def score_inputs(braintrust: FakeBraintrust, experiment_id: str) -> list[Any]:
    return [
        row.get("input")
        for row in braintrust.rows(experiment_id)
        if (row.get("span_attributes") or {}).get("type") == "score" and "input" in row
    ]


@pytest.mark.long  # two keyed runs side by side; the test below runs the flag alone
def test_the_api_key_flag_alone_gives_the_same_uploads_as_the_variable(tmp_path: Path) -> None:
    dataset = tmp_path / "one.yaml"
    dataset.write_text(textwrap.dedent(ONE_CASE))
    with FakeBraintrust() as braintrust:
        by_variable = braintrust_eval(keyed_env(tmp_path / "variable", dataset, braintrust, variable=True))
        assert by_variable.returncode == 0, by_variable.stderr[-3000:]
        seen = len(braintrust.requests)
        flag_env = keyed_env(tmp_path / "flag", dataset, braintrust, variable=False)
        by_flag = braintrust_eval(flag_env, "--api-key", API_KEY)
        assert by_flag.returncode == 0, by_flag.stderr[-3000:]
        first, second = braintrust.experiments
        chats = [request for request in braintrust.requests[seen:] if request.path.endswith("/chat/completions")]
        for experiment in (first, second):
            assert experiment["repo_info"] and experiment["repo_info"]["commit"]  # git info
            assert experiment["metadata"]["judge_provider"] == "braintrust"  # the gateway judge
            assert experiment["metadata"]["tool_count"] > 0
            [root] = braintrust.root_rows(experiment["id"])
            assert root["trace_scores"]["factuality"] == 1
            inputs = score_inputs(braintrust, experiment["id"])
            assert inputs and all(set(item) <= LEAN_SCORE_INPUT for item in inputs)  # lean uploads
        assert set(first["metadata"]) == set(second["metadata"])
        assert second["base_exp_id"] == first["id"]  # the base lookup followed the flag
        assert chats and all(chat.headers["authorization"] == f"Bearer {API_KEY}" for chat in chats)
        sizes = [braintrust.bytes_uploaded(experiment["id"]) for experiment in (first, second)]
        assert abs(sizes[0] - sizes[1]) <= 0.1 * sizes[0], sizes
    assert API_KEY not in "".join(path.read_text() for path in (tmp_path / "flag").rglob("*.json*"))


def test_lost_uploads_are_counted_with_the_api_key_flag_alone(tmp_path: Path) -> None:
    dataset = tmp_path / "one.yaml"
    dataset.write_text(textwrap.dedent(ONE_CASE))
    results = tmp_path / "results"
    with FakeBraintrust(refuse_logs=503) as braintrust:
        env = keyed_env(results, dataset, braintrust, variable=False) | {"BRAINTRUST_NUM_RETRIES": "0"}
        completed = braintrust_eval(env, "--api-key", API_KEY)
        refused = braintrust.refused_rows
    assert completed.returncode == 1, completed.stderr[-3000:]
    assert refused > 0 and f"FAIL {refused} row(s) uploaded to Braintrust were lost" in completed.stderr
    [run] = [path for path in results.iterdir() if path.is_dir()]
    assert list((run / "braintrust-failed").glob("*.json"))


@pytest.fixture
def clean_login(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No Braintrust variable, no CLI flags, and a working directory with no `.env.braintrust` above it."""
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if not k.startswith("BRAINTRUST_")})
    monkeypatch.setattr(login, "cli_flags", lambda argv=None: None)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_cli_flags_are_read_by_the_clis_own_parser() -> None:
    flags = cli_flags(["eval", "--api-key", "bt-k", "--list", "evals/", "--filter", "input=x"])
    assert flags == CliFlags(api_key="bt-k", list=True, filters=("input=x",))
    assert cli_flags(["push", "evals/eval_x.py"]) is None


def test_the_api_key_flag_is_exported_as_the_sdks_variable(clean_login: Path) -> None:
    assert not sending_logs()
    adopt_cli_login(CliFlags(api_key="bt-flag", app_url="http://127.0.0.1:9"))
    assert os.environ["BRAINTRUST_API_KEY"] == "bt-flag" and os.environ["BRAINTRUST_APP_URL"] == "http://127.0.0.1:9"
    assert braintrust_api_key() == "bt-flag" and sending_logs()


def test_the_suite_env_file_and_the_sdks_own_file_log_in(clean_login: Path) -> None:
    (clean_login / ".env.braintrust").write_text("BRAINTRUST_API_KEY=bt-sdk-file\n")
    assert braintrust_api_key() == "bt-sdk-file" and sending_logs()  # as the SDK's login finds it
    (clean_login / ".env").write_text("BRAINTRUST_API_KEY=bt-dotenv\n")
    load_suite_env(clean_login / ".env")
    assert os.environ["BRAINTRUST_API_KEY"] == "bt-dotenv"  # the variable wins over .env.braintrust, as in the SDK
