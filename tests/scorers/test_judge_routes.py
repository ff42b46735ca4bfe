"""Judge routes: per-route default models, the proxy rule, the preflight, and what the judge costs."""

from __future__ import annotations

import pytest

from harness.models.rules import openai_rules
from scorers import judge_client as judge_module
from scorers.factuality import factuality
from scorers.judge_client import (
    DEFAULT_JUDGE_MODELS,
    JudgePreflightError,
    judge_settings,
    judge_totals,
    preflight,
)
from tests.fakes.openai_judge import FakeJudge
from tests.scorers.conftest import case, record


def test_each_route_has_its_own_default_and_the_anthropic_route_follows_a_proxy() -> None:
    openai_route = judge_settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert openai_route and openai_route.model == DEFAULT_JUDGE_MODELS["openai"]
    assert not openai_route.model.startswith("claude")
    direct = judge_settings({"ANTHROPIC_API_KEY": "an"})
    assert direct and direct.base_url == "https://api.anthropic.com/v1/" and direct.model == "claude-haiku-4-5"
    proxied = judge_settings({"ANTHROPIC_API_KEY": "an", "ANTHROPIC_BASE_URL": "https://llm-proxy.example/"})
    assert proxied and proxied.base_url == "https://llm-proxy.example/v1/"
    explicit = judge_settings(
        {
            "ANTHROPIC_API_KEY": "an",
            "ANTHROPIC_BASE_URL": "https://llm-proxy.example",
            "ANTHROPIC_OPENAI_BASE_URL": "https://openai-shaped.example/v1/",
        }
    )
    assert explicit and explicit.base_url == "https://openai-shaped.example/v1/"
    gateway = judge_settings({"BRAINTRUST_API_KEY": "bt"})
    assert gateway and gateway.model == DEFAULT_JUDGE_MODELS["braintrust"]


def test_preflight_passes_a_judge_that_takes_forced_tools_and_stops_one_that_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(judge_module, "_PASSED", set())
    with FakeJudge() as judge:
        env = {**judge.env(), "OPENAI_API_KEY": "sk-judge-secret-0123"}
        preflight(env)
        preflight(env)  # once per process and route
        # The classification, then a forced call the prompt argues against (the route must obey the force).
        assert len(judge.bodies) == 2 and judge.bodies[0]["temperature"] == 0
        assert judge.bodies[1]["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
        with pytest.raises(JudgePreflightError) as raised:
            preflight({**env, "EVAL_JUDGE_MODEL": "claude-sonnet-5-5"})
    message = str(raised.value)
    assert "judge route openai" in message and "claude-sonnet-5-5" in message and "HTTP 400" in message
    assert "refuses forced tool use and temperature 0; set EVAL_JUDGE_MODEL" in message
    assert "sk-judge-secret-0123" not in message
    preflight({"EVAL_JUDGE_PROVIDER": "none"})  # no judge: nothing to check


async def test_the_judges_tokens_and_cost_are_on_the_score_and_summed_per_experiment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeJudge(choice="C") as judge:
        for name, value in judge.env().items():
            monkeypatch.setenv(name, value)
        trial = record("complete-add-column-subtitle", final_answer="Done: subtitle is on main.")
        score = await factuality(trial, case("complete-add-column-subtitle"))
    metadata = score.metadata
    assert score.score == 1.0 and metadata["judge_calls"] == 1
    assert metadata["judge_input_tokens"] > 0 and metadata["judge_output_tokens"] == 20
    price = openai_rules(DEFAULT_JUDGE_MODELS["openai"]).price
    assert price is not None
    expected = (metadata["judge_input_tokens"] * price.input + 20 * price.output) / 1_000_000
    assert metadata["judge_cost_usd"] == round(expected, 6)
    totals = judge_totals([trial.model_dump(mode="json"), {"case_id": "never-judged"}])
    assert totals["judge_calls"] == 1 and totals["judge_cost_usd"] == metadata["judge_cost_usd"]
