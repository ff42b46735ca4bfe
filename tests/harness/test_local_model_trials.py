"""Whole trials of a local model, its recorded llama-server answers replayed (issue 18 items 1 and 4, issue 20 item 2).

The local Neon server and embedded PostgreSQL are real; the model's answers are the ones the real
llama-server gave (tests/data/llama/), in the order a trial meets them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from harness.config import ConfigError, Settings
from harness.mcp.server_process import LocalServer
from harness.run.trial import TrialRunner
from tests.fakes.llama_replay import LlamaReplay, answer
from tests.harness.conftest import make_case, settings_from

SettingsFactory = Callable[..., Settings]
MODEL = "smollm2-135m-instruct"
READ_CASE = make_case(
    id="count-customers",
    scenario="tool_selection",
    input="In project {project_id}, how many customers are there?",
    follow_ups=[],
    approval="none",
    expected_answer="There are 3 customers.",
    reference_sql=None,
    reference_calls=[{"tool": "run_sql", "arguments": {"sql": "SELECT count(*) FROM customers"}}],
    expected_main="unchanged",
    required_tools=["run_sql"],
)
DDL = "ALTER TABLE customers ADD COLUMN nickname text"


def local_env(url: str, **extra: str) -> dict[str, str]:
    return {"EVAL_MODEL": f"openai:{MODEL}", "OPENAI_API_KEY": "local", "OPENAI_BASE_URL": url, **extra}


def project_in(body: Any) -> str:
    """The trial's project id, from the first user message of a chat-completions request."""
    first = next(message["content"] for message in body["messages"] if message["role"] == "user")
    found = re.search(r"In project (\S+?),", first)
    assert found, first
    return found.group(1)


def completed(status: int, recorded: Any) -> tuple[int, Any]:
    """A recorded reply as if it had not been cut: `finish_reason: tool_calls`, as a complete call ends."""
    recorded["choices"][0]["finish_reason"] = "tool_calls"
    return status, recorded


def recorded_call_running(sql: str) -> Callable[[Any], tuple[int, Any]]:
    """The recorded tool-call reply, its first call turned into run_sql(`sql`) on the trial's own project."""

    def reply(body: Any) -> tuple[int, Any]:
        status, recorded = answer("openai_tool_calls_cut")
        call = recorded["choices"][0]["message"]["tool_calls"][0]
        call["function"] = {"name": "run_sql", "arguments": json.dumps({"projectId": project_in(body), "sql": sql})}
        recorded["choices"][0]["message"]["tool_calls"] = [call]
        return completed(status, recorded)

    return reply


async def test_a_tool_call_written_as_text_is_its_own_outcome_never_the_final_answer(
    local_server: LocalServer, runner_settings: SettingsFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    _, props = answer("props")
    _, body = answer("openai_fenced_call")
    with LlamaReplay(chat=["openai_fenced_call"]) as server:
        async with TrialRunner(runner_settings(local_env(server.openai_url)), local_server=local_server) as runner:
            record = await runner.run(READ_CASE, 0)
    assert record.outcome == "tool_call_as_text"
    assert record.final_answer == ""  # the JSON is not an answer
    assert record.error and "run_sql" in record.error and "fenced json" in record.error
    assert record.messages[-1]["content"][0]["text"] == body["choices"][0]["message"]["content"]  # kept as written
    assert record.usage.model_calls == 1 and record.usage.prompt_tokens == body["usage"]["prompt_tokens"]
    assert record.answered_by == [body["model"]] and record.cost_usd is None  # an unpriced local model
    window = props["default_generation_settings"]["n_ctx"]
    assert record.config.context_window == window
    assert record.before is not None and record.after is not None
    notice = f"openai:{MODEL} is in no rules table: no price (cost n/a), context window {window} tokens"
    assert notice in capsys.readouterr().err


async def test_a_context_overflow_after_ddl_on_main_still_shows_main_as_the_model_left_it(
    local_server: LocalServer, runner_settings: SettingsFactory
) -> None:
    _, overflow = answer("openai_context_overflow")
    with LlamaReplay(chat=[recorded_call_running(DDL), "openai_context_overflow"]) as server:
        async with TrialRunner(runner_settings(local_env(server.openai_url)), local_server=local_server) as runner:
            record = await runner.run(READ_CASE, 0)
    assert record.outcome == "context_window_exceeded", record.error
    error = overflow["error"]
    assert record.error and f"prompt {error['n_prompt_tokens']} tokens, context {error['n_ctx']} tokens" in record.error
    assert [call.name for call in record.tool_calls] == ["run_sql"] and not record.tool_calls[0].is_error
    assert record.before and record.after and not record.after.error
    assert "nickname" not in (record.before.schema_sql or "") and "nickname" in (record.after.schema_sql or "")


async def test_a_server_error_after_the_model_was_reached_still_captures_main(
    local_server: LocalServer, runner_settings: SettingsFactory
) -> None:
    # The second request finds the replay exhausted: a 400 that is no overflow, so not the model's doing.
    with LlamaReplay(chat=[recorded_call_running(DDL)]) as server:
        async with TrialRunner(runner_settings(local_env(server.openai_url)), local_server=local_server) as runner:
            record = await runner.run(READ_CASE, 0)
    assert record.outcome == "infra_error" and "replay exhausted" in (record.error or "")
    assert record.after is not None and "nickname" in (record.after.schema_sql or "")


async def test_arguments_that_are_not_json_are_answered_with_an_error_and_never_sent_to_the_server(
    local_server: LocalServer, runner_settings: SettingsFactory
) -> None:
    # The recorded three calls, the last with its arguments cut mid-string, as a complete reply would carry
    # them (a server that reported no cut): the first two run, the third is answered with an error.
    status, recorded = completed(*answer("openai_tool_calls_cut"))
    cut = recorded["choices"][0]["message"]["tool_calls"][-1]["function"]["arguments"]
    with LlamaReplay(chat=[(status, recorded), "openai_fenced_call"]) as server:
        async with TrialRunner(runner_settings(local_env(server.openai_url)), local_server=local_server) as runner:
            record = await runner.run(READ_CASE, 0)
        sent_back = server.bodies()[1]["messages"][-1]
    assert [call.name for call in record.tool_calls] == ["get_database_tables"] * 3
    assert all(call.forwarded_arguments is not None for call in record.tool_calls[:2])
    call = record.tool_calls[2]
    assert call.is_error and call.forwarded_arguments is None and call.arguments == {"_unparsable_arguments": cut}
    assert call.result_text.startswith("Error: the arguments are not a JSON object")
    assert sent_back["role"] == "tool" and "not a JSON object" in sent_back["content"]
    assert record.outcome == "tool_call_as_text"  # the second recorded reply: the call written as text


async def test_a_reply_cut_by_eval_max_tokens_runs_none_of_its_calls(
    local_server: LocalServer, runner_settings: SettingsFactory
) -> None:
    with LlamaReplay(chat=["openai_tool_calls_cut"]) as server:
        env = local_env(server.openai_url, EVAL_MAX_TOKENS="128")
        async with TrialRunner(runner_settings(env), local_server=local_server) as runner:
            record = await runner.run(READ_CASE, 0)
    assert record.outcome == "max_tokens" and "cut at EVAL_MAX_TOKENS=128" in (record.error or "")
    assert record.tool_calls == [] and record.final_answer == ""
    assert record.after is not None


def test_eval_context_window_is_checked_before_any_trial() -> None:
    with pytest.raises(ConfigError) as raised:
        settings_from(local_env("http://127.0.0.1:9/v1", EVAL_CONTEXT_WINDOW="8k"))
    assert "EVAL_CONTEXT_WINDOW: '8k' is not a number of tokens" in str(raised.value)
    assert (
        settings_from(local_env("http://127.0.0.1:9/v1", EVAL_CONTEXT_WINDOW="8192")).provider_values()[
            "EVAL_CONTEXT_WINDOW"
        ]
        == "8192"
    )


async def test_a_model_that_keeps_calling_tools_stops_at_the_turn_cap(
    local_server: LocalServer, runner_settings: SettingsFactory
) -> None:
    calls = [recorded_call_running("SELECT count(*) FROM customers")] * 3
    with LlamaReplay(chat=list(calls)) as server:
        env = local_env(server.openai_url, EVAL_MAX_TURNS="2")
        async with TrialRunner(runner_settings(env), local_server=local_server) as runner:
            record = await runner.run(READ_CASE, 0)
        asked = len(server.bodies())
    assert record.outcome == "turn_cap" and record.error == "stopped after EVAL_MAX_TURNS=2 model calls"
    assert asked == 2 and [call.name for call in record.tool_calls] == ["run_sql", "run_sql"]
    assert record.usage.model_calls == 2 and record.after is not None
