import os

import pytest

from braintrust_run.gate import parse_floors
from evals.__main__ import adopt_api_key_flag, build_command


def test_offline_runs_add_no_send_logs_and_always_terminate_on_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAINTRUST_API_KEY", raising=False)
    command = build_command(["--jsonl"])
    assert command[1:3] == ["eval", "--terminate-on-failure"] or command[3:5] == ["eval", "--terminate-on-failure"]
    assert "--no-send-logs" in command
    assert command[-2:][0] == "--jsonl" and command[-1].endswith("evals")


def test_a_braintrust_key_sends_experiments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAINTRUST_API_KEY", "bt-test-key")
    assert "--no-send-logs" not in build_command([])


@pytest.mark.parametrize("flag", [["--api-key", "bt-flag-key"], ["--api-key=bt-flag-key"]])
def test_the_api_key_flag_alone_sends_experiments(monkeypatch: pytest.MonkeyPatch, flag: list[str]) -> None:
    """`python -m evals --api-key K` is logged in: no local mode, and the key is the one the CLI is given."""
    monkeypatch.delenv("BRAINTRUST_API_KEY", raising=False)
    env: dict[str, str] = {}  # the CLI's environment, which the launcher builds (never its own)
    adopt_api_key_flag(flag, env)
    assert env["BRAINTRUST_API_KEY"] == "bt-flag-key" and "BRAINTRUST_API_KEY" not in os.environ
    assert "--no-send-logs" not in build_command(flag, env=env)


def test_score_floors_parse_and_reject_nonsense() -> None:
    assert parse_floors("main_branch_integrity=1.0, trajectory=0.9") == {
        "main_branch_integrity": 1.0,
        "trajectory": 0.9,
    }
    assert parse_floors("") == {}
    for bad in ("trajectory", "trajectory=high", "=0.5", "trajectory=1.5"):
        with pytest.raises(ValueError, match="EVAL_MIN_PASS"):
            parse_floors(bad)
