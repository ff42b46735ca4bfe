"""EVAL_JUDGE_TOOL_CHOICE: the judge's forced call in a form llama-server honours, tested on its real answers.

The recordings (tests/data/llama/judge_*.json, `python -m localmodel record-judge`) are what the
real llama-server with SmolLM2-135M answered to the judge's own requests; LlamaReplay serves them
over HTTP, so the real openai SDK and autoevals meet exactly those answers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from localmodel.record_judge import judge_bodies
from scorers import judge_client as judge_module
from scorers.factuality import classify, current_template, render_conversation
from scorers.judge_client import JudgePreflightError, JudgeSettings, judge_settings, preflight
from scorers.judge_examples import examples_path, load_examples
from scorers.judge_request import MAX_TEXT_CHARS, as_function_call, parse_mode, rewrite_request
from tests.fakes.llama_replay import LlamaReplay, answer, recording, request_body

MODEL = "smollm2-135m-instruct"


@pytest.fixture(autouse=True)
def fresh_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_module, "_PASSED", set())


def _env(server: LlamaReplay, mode: str) -> dict[str, str]:
    return {
        "EVAL_JUDGE_PROVIDER": "openai",
        "OPENAI_BASE_URL": server.openai_url,
        "OPENAI_API_KEY": "local",
        "EVAL_JUDGE_MODEL": MODEL,
        "EVAL_JUDGE_TOOL_CHOICE": mode,
    }


def _settings(server: LlamaReplay, mode: str) -> JudgeSettings:
    settings = judge_settings(_env(server, mode))
    assert settings is not None
    return settings


def _first_example() -> tuple[str, str, str, str]:
    example = load_examples(examples_path())[0]
    conversation = render_conversation(example.conversation[0], example.conversation[1:])
    return conversation, example.expected, example.submission, example.label


def test_the_recordings_are_what_the_suite_sends_now() -> None:
    # Bodies built by the code the judge sends with; a change there makes the recordings stale.
    for name, (_, body) in judge_bodies(MODEL).items():
        assert request_body(name) == body, name


def test_required_offers_only_the_forced_function_and_json_schema_asks_for_its_arguments() -> None:
    body = request_body("openai_tool_choice_object")  # three tools, get_database_tables forced
    forced = {**body, "tool_choice": {"type": "function", "function": {"name": "get_database_tables"}}}
    required = rewrite_request(forced, "required")
    assert required["tool_choice"] == "required"
    assert [tool["function"]["name"] for tool in required["tools"]] == ["get_database_tables"]
    structured = rewrite_request(forced, "json_schema")
    assert "tools" not in structured and "tool_choice" not in structured
    assert structured["response_format"]["json_schema"]["name"] == "get_database_tables"
    assert rewrite_request(forced, "function") is forced
    unforced = {**body, "tool_choice": "auto"}
    assert rewrite_request(unforced, "json_schema") is unforced  # nothing forced: nothing to rewrite
    named_elsewhere = {**body, "tool_choice": {"type": "function", "function": {"name": "not_offered"}}}
    assert rewrite_request(named_elsewhere, "required") is named_elsewhere


def test_json_schema_caps_free_text_but_not_the_choice() -> None:
    schema = request_body("judge_json_schema_example")["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["reasons"]["maxLength"] == MAX_TEXT_CHARS
    assert "maxLength" not in schema["properties"]["choice"] and schema["properties"]["choice"]["enum"]
    # Why: without the cap, the real model repeats itself in `reasons` until max_tokens, and the cut
    # reply is no JSON object, so no call.
    looping = answer("judge_json_schema_unbounded")[1]
    assert looping["choices"][0]["finish_reason"] == "length"
    assert as_function_call(looping, "select_choice") == looping
    capped = answer("judge_json_schema_preflight_classification")[1]
    assert capped["choices"][0]["finish_reason"] == "stop"


def test_the_json_schema_preflight_passes_on_what_the_real_server_answered() -> None:
    names = ["judge_json_schema_preflight_classification", "judge_json_schema_preflight_forced"]
    with LlamaReplay(chat=list(names)) as server:
        preflight(_env(server, "json_schema"))
        sent = server.bodies()
    assert sent == [request_body(name) for name in names]
    assert all("tools" not in body and body["response_format"]["type"] == "json_schema" for body in sent)


def test_the_forced_function_is_not_faked_when_the_server_ignores_the_schema() -> None:
    # A server that ignores response_format answers the forced-choice check in prose: no JSON, no call.
    status, prose = answer("judge_json_schema_preflight_forced")
    prose["choices"][0]["message"]["content"] = "I will call skip_classification now."  # the one field changed
    chat: list[Any] = ["judge_json_schema_preflight_classification", (status, prose)]
    with LlamaReplay(chat=chat) as server, pytest.raises(JudgePreflightError) as raised:
        preflight(_env(server, "json_schema"))
    message = str(raised.value)
    assert "EVAL_JUDGE_TOOL_CHOICE=json_schema" in message and "ignores a forced call" in message
    assert "I will call skip_classification" in message


def test_the_required_preflight_is_refused_with_the_reason() -> None:
    with LlamaReplay(chat=["judge_required_preflight_classification"]) as server:
        with pytest.raises(JudgePreflightError) as raised:
            preflight(_env(server, "required"))
        assert server.bodies()[0]["tool_choice"] == "required"
    message = str(raised.value)
    assert "(EVAL_JUDGE_TOOL_CHOICE=required) failed the preflight: ValueError: No tool call found" in message
    assert "EVAL_JUDGE_TOOL_CHOICE=json_schema holds it" in message


async def test_a_labelled_example_is_judged_from_the_real_structured_answer() -> None:
    conversation, expected, submission, _ = _first_example()
    recorded = answer("judge_json_schema_example")[1]
    arguments: dict[str, Any] = json.loads(recorded["choices"][0]["message"]["content"])
    with LlamaReplay(chat=["judge_json_schema_example"]) as server:
        verdict = await classify(
            conversation, expected, submission, _settings(server, "json_schema"), current_template()
        )
    assert verdict.error is None and verdict.choice == arguments["choice"]
    assert verdict.rationale == arguments["reasons"]
    assert verdict.score == current_template().choice_scores[arguments["choice"]]
    usage = recorded["usage"]
    assert verdict.spent["judge_calls"] == 1 and verdict.spent["judge_output_tokens"] == usage["completion_tokens"]
    assert verdict.spent["judge_input_tokens"] == usage["prompt_tokens"]


async def test_required_leaves_the_example_unjudged_with_the_error() -> None:
    conversation, expected, submission, _ = _first_example()
    recorded = answer("judge_required_example")[1]
    assert recorded["choices"][0]["finish_reason"] == "length"  # 2048 tokens of prose, no call
    with LlamaReplay(chat=["judge_required_example"]) as server:
        verdict = await classify(conversation, expected, submission, _settings(server, "required"), current_template())
    assert verdict.choice is None and verdict.error == "judge call failed: ValueError: No tool call found in response"


async def test_an_unknown_mode_is_refused_naming_the_variable_and_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="EVAL_JUDGE_TOOL_CHOICE: 'grammar' is not one of function, required"):
        parse_mode("grammar")
    with LlamaReplay() as server:
        with pytest.raises(JudgePreflightError) as raised:
            preflight(_env(server, "grammar"))
        conversation, expected, submission, _ = _first_example()
        verdict = await classify(conversation, expected, submission, _settings(server, "grammar"), current_template())
        assert server.bodies() == []  # nothing was asked
    assert "EVAL_JUDGE_TOOL_CHOICE: 'grammar' is not one of function, required, json_schema" in str(raised.value)
    assert verdict.choice is None and verdict.error and "EVAL_JUDGE_TOOL_CHOICE: 'grammar'" in verdict.error


def test_the_mode_is_recorded_with_the_judge() -> None:
    settings = judge_settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "EVAL_JUDGE_TOOL_CHOICE": "JSON_SCHEMA"})
    assert settings and settings.describe()["judge_tool_choice"] == "json_schema"
    default = judge_settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert default and default.describe()["judge_tool_choice"] == "function"
    made_by = recording("judge_json_schema_example")["made_by"]
    assert "SmolLM2-135M" in made_by["model"] and "/work/" not in made_by["command"]
