"""The Anthropic provider against a stand-in that follows a current model's rules, over the wire."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.models.providers.anthropic import AnthropicProvider
from harness.models.providers.registry import model_rules
from harness.models.rules import _assigned_literal, cost_usd, sdk_deprecated_models
from tests.fakes.anthropic_server import FakeAnthropic, Step, reply, text, tool_use

LONG = "Runs one SQL statement on a branch of a Neon project and returns the rows. " * 80  # > 1024 tokens
TOOLS = [{"name": "run_sql", "description": LONG, "input_schema": {"type": "object", "properties": {}}}]
QUESTION = [{"role": "user", "content": "How many posts are there?"}]


def post(fake: FakeAnthropic, **body: Any) -> httpx.Response:
    payload = {"model": "claude-sonnet-5-5", "max_tokens": 100, "messages": QUESTION, **body}
    return httpx.post(fake.url + "/v1/messages", json=payload, headers={"x-api-key": "k"})


def test_the_sdks_deprecation_table_is_read_from_its_file_as_the_sdk_has_it(tmp_path: Path) -> None:
    from anthropic._data import DEPRECATED_MODELS

    assert sdk_deprecated_models() == dict(DEPRECATED_MODELS) != {}
    table = tmp_path / "table.py"
    table.write_text(
        "from typing import Dict\nX: Dict[str, str] = {'a': 'May 1st, 2027'}\nY = {'b': 'c'}\nZ = make()\n"
    )
    assert _assigned_literal(table, "X") == {"a": "May 1st, 2027"} and _assigned_literal(table, "Y") == {"b": "c"}
    assert _assigned_literal(table, "Z") is None and _assigned_literal(table, "W") is None  # then the SDK is imported
    assert _assigned_literal(tmp_path / "missing.py", "X") is None


def test_settings_a_current_model_refuses_get_anthropics_400_body() -> None:
    with FakeAnthropic([reply(text("x"))]) as fake:
        sampling = post(fake, temperature=0)
        forced = post(fake, tools=TOOLS, tool_choice={"type": "any"})
        manual = post(fake, thinking={"type": "enabled", "budget_tokens": 2000})
        legacy = post(fake, model="claude-haiku-4-5", temperature=0, tools=TOOLS, tool_choice={"type": "any"})
    assert sampling.status_code == 400
    body = sampling.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"] == "`temperature` is deprecated for this model."
    assert forced.status_code == 400 and "tool_choice.type 'any' is not supported" in forced.json()["error"]["message"]
    assert manual.status_code == 400 and "thinking.type.enabled is not supported" in manual.json()["error"]["message"]
    assert legacy.status_code == 200  # Haiku 4.5 still takes both
    assert len(fake.refused) == 3


async def test_thinking_blocks_go_back_unchanged_and_caching_is_counted_and_priced() -> None:
    from anthropic import BadRequestError  # here: the SDK costs 2 s to import, every worker collects this file

    first_reply = reply(text("Let me count them."), tool_use("run_sql", {"sql": "select count(*) from posts"}))
    script: list[Step] = [first_reply, reply(text("There are 3 posts."))]
    with FakeAnthropic(script) as fake:
        provider = AnthropicProvider("claude-sonnet-5-5", "k", base_url=fake.url, max_retries=0)
        ask: dict[str, Any] = {"system": "Be careful.", "tools": TOOLS, "max_tokens": 16000, "temperature": None}
        first = await provider.complete(messages=QUESTION, **ask)
        thinking = first.content[0]
        assert thinking["type"] == "thinking" and thinking["signature"]
        assert "Let me count them." in thinking["thinking"]  # Sonnet 5.5: text between tool calls
        assert [block["type"] for block in first.content] == ["thinking", "tool_use"]
        result = {"type": "tool_result", "tool_use_id": first.tool_uses[0]["id"], "content": "3"}
        history: list[dict[str, Any]] = [
            *QUESTION,
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [result]},
        ]
        second = await provider.complete(messages=history, **ask)
        assert second.text == "There are 3 posts." and second.stop_reason == "end_turn"
        assert fake.signer.verified == 1
        fake.assert_clean()

        altered = copy.deepcopy(history)
        altered[1]["content"][0]["thinking"] += " (edited)"
        with pytest.raises(BadRequestError, match="Invalid `signature` in `thinking` block"):
            await provider.complete(messages=altered, **ask)
        dropped = copy.deepcopy(history)
        dropped[1]["content"] = dropped[1]["content"][1:]
        with pytest.raises(BadRequestError, match="Expected `thinking` or `redacted_thinking`"):
            await provider.complete(messages=dropped, **ask)
        await provider.aclose()
    sent = fake.bodies[0]
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["system"] == [{"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}]
    assert "temperature" not in sent and "thinking" not in sent
    assert first.usage.cache_creation_input_tokens > 1024 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert first.usage.thinking_tokens > 0 and first.usage.output_tokens >= first.usage.thinking_tokens
    priced = cost_usd(model_rules("anthropic:claude-sonnet-5-5"), second.usage)
    expected = (
        second.usage.input_tokens * 2.0
        + second.usage.output_tokens * 10.0
        + second.usage.cache_read_input_tokens * 0.10
    ) / 1_000_000
    assert priced == round(expected, 6)


async def test_temperature_reaches_only_models_that_take_it_as_a_top_level_field() -> None:
    with FakeAnthropic([reply(text("ok"))]) as fake:
        legacy = AnthropicProvider("claude-haiku-4-5", "k", base_url=fake.url, max_retries=0)
        await legacy.complete(system=None, messages=QUESTION, tools=[], max_tokens=100, temperature=0.0)
        await legacy.aclose()
        current = AnthropicProvider("claude-sonnet-5-5", "k", base_url=fake.url, max_retries=0)
        with pytest.raises(ValueError, match="EVAL_TEMPERATURE=0 cannot be used with anthropic:claude-sonnet-5-5"):
            await current.complete(system=None, messages=QUESTION, tools=[], max_tokens=100, temperature=0.0)
        await current.aclose()
    assert len(fake.bodies) == 1 and fake.bodies[0]["temperature"] == 0.0
    fake.assert_clean()
