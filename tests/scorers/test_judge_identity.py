"""The judge never quietly becomes the model under test, and a route that ignores forced tool choice stops the run.

Issue 20 items 5 and 6: with only OPENAI_BASE_URL set, the judge ran on the local server that
served the model under test, its metadata said `gpt-4.1-mini` and priced it while the responses
said another model; and a preflight passed a server that turns a forced function into `auto`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scorers import judge_client as judge_module
from scorers.factuality import factuality
from scorers.judge_client import (
    SHARED_ENDPOINT_VARIABLE,
    JudgePreflightError,
    JudgeSettings,
    forced_choice_check,
    preflight,
)
from tests.evals.cli import offline_env, run_cli
from tests.fakes.llama_replay import LlamaReplay
from tests.fakes.openai_judge import FakeJudge
from tests.scorers.conftest import case, record

LOCAL_MODEL = "smollm2-135m-instruct"


@pytest.fixture(autouse=True)
def fresh_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_module, "_PASSED", set())


def test_a_judge_on_the_endpoint_of_the_model_under_test_is_refused_unless_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeJudge(answered_as=LOCAL_MODEL) as server:
        env = {**server.env(), "EVAL_MODEL": f"openai:{LOCAL_MODEL}", "OPENAI_API_KEY": "local"}
        with pytest.raises(JudgePreflightError) as raised:
            preflight(env)
        assert server.bodies == []  # refused before asking anything
        message = str(raised.value)
        assert f"model under test openai:{LOCAL_MODEL}" in message and SHARED_ENDPOINT_VARIABLE in message
        assert "\n" not in message
        preflight({**env, SHARED_ENDPOINT_VARIABLE: "1"})
        assert len(server.bodies) == 2  # allowed: the preflight ran
    warning = capsys.readouterr().err
    assert "shares its endpoint with the model under test" in warning and server.url.split("//")[1] in warning


def test_the_anthropic_route_of_the_same_server_counts_as_the_same_endpoint() -> None:
    with FakeJudge() as server:
        root = server.url.removesuffix("/v1")
        env = {**server.env(), "EVAL_MODEL": "anthropic:local-model", "ANTHROPIC_BASE_URL": root}
        with pytest.raises(JudgePreflightError, match="model under test anthropic:local-model"):
            preflight(env)
        preflight({**env, "EVAL_MODEL": "control:oracle"})  # a control agent has no endpoint to share


def test_a_route_that_turns_forced_tool_choice_into_auto_fails_the_preflight() -> None:
    # The classification alone passes (select_choice is the only tool, so `auto` picks it): the lucky
    # call that let issue 20's run through. The forced call the prompt argues against does not.
    with FakeJudge(ignores_forced_choice=True) as server:
        with pytest.raises(JudgePreflightError) as raised:
            preflight(server.env())
        names = [body["tools"][-1]["function"]["name"] for body in server.bodies]
    message = str(raised.value)
    assert names == ["select_choice", "skip_classification"]
    assert "ignores a forced tool_choice" in message and "call(s) to skip_classification" in message
    with FakeJudge() as obeying:
        preflight(obeying.env())  # a route that obeys passes the same check


async def test_the_judge_records_the_model_that_answered_and_never_prices_a_guess(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeJudge(choice="C", answered_as=LOCAL_MODEL) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        trial = record("complete-add-column-subtitle", final_answer="Done: subtitle is on main.")
        score = await factuality(trial, case("complete-add-column-subtitle"))
    metadata = score.metadata
    assert metadata["judge_model"] == "gpt-4.1-mini"  # what was asked for
    assert metadata["judge_answered_by"] == [LOCAL_MODEL]  # what answered
    assert metadata["judge_calls"] == 1 and metadata["judge_input_tokens"] > 0
    assert metadata["judge_cost_usd"] is None  # gpt-4.1-mini's price would be a guess about another model


def test_a_failed_preflight_stops_braintrust_eval_with_exit_2_and_one_line(tmp_path: Path) -> None:
    with FakeJudge(ignores_forced_choice=True) as server:
        env = offline_env(tmp_path / "results", EVAL_MODEL="control:oracle", **server.env())
        completed = run_cli(env, "evals/eval_tool_selection.py", timeout=200)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "Traceback" not in completed.stderr
    lines = [line for line in completed.stderr.splitlines() if "ignores a forced tool_choice" in line]
    assert len(lines) == 1 and lines[0].startswith("evals: stopping before any trial: judge route openai")
    assert not (tmp_path / "results").exists()


async def test_what_the_real_server_answered_to_a_forced_function_is_refused() -> None:
    # llama-server's answer to tool_choice {"type": "function", "function": {"name": "get_database_tables"}}:
    # text, no call (the object was read as `auto`).
    with LlamaReplay(chat=["openai_tool_choice_object"]) as server:
        settings = JudgeSettings("openai", server.openai_url, "smollm2-135m-instruct", "local")
        problem = await forced_choice_check(settings)
        sent = server.bodies()[0]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
    assert problem is not None and "ignores a forced tool_choice" in problem and "no tool call (text" in problem
