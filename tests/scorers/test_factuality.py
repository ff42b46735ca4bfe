"""The factuality judge through the real openai SDK and autoevals, against a fake judge on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from scorers import factuality as factuality_module
from scorers.factuality import factuality
from scorers.judge_client import ANTHROPIC_OPENAI_URL, DEFAULT_JUDGE_MODELS, NO_JUDGE_REASON, judge_settings
from scorers.judge_template import BUNDLED_TEMPLATE, TemplateError, load_template
from tests.fakes.openai_judge import FakeJudge, prompt_of
from tests.scorers.conftest import case, record

JUDGE_ENV = (
    "BRAINTRUST_API_KEY",
    "BRAINTRUST_AI_GATEWAY_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_OPENAI_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "EVAL_JUDGE_MODEL",
    "EVAL_JUDGE_PROVIDER",
    "EVAL_JUDGE_TEMPLATE",
)
TEMPLATE_REF = "factuality@2"
ANSWER = "Done. The subtitle column is now on main and the temporary branch mcp-migration-42 was deleted."


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def judge_server() -> Iterator[FakeJudge]:
    with FakeJudge() as fake:
        yield fake


@pytest.fixture
def judge(judge_server: FakeJudge, clean_env: pytest.MonkeyPatch) -> FakeJudge:
    clean_env.setenv("OPENAI_BASE_URL", judge_server.url)
    clean_env.setenv("OPENAI_API_KEY", "sk-test-secret-value")
    return judge_server.reset()


@pytest.mark.parametrize(("choice", "expected"), [("A", 0.4), ("B", 0.8), ("C", 1.0), ("D", 0.0), ("E", 1.0)])
async def test_each_choice_maps_to_its_score(judge: FakeJudge, choice: str, expected: float) -> None:
    judge.choice = choice
    trial = record("complete-add-column-subtitle", final_answer=ANSWER)
    score = await factuality(trial, case("complete-add-column-subtitle"))
    assert score.name == "factuality" and score.score == expected
    assert score.metadata["choice"] == choice and score.metadata["rationale"] == judge.reasons
    assert score.metadata["judge_template"] == TEMPLATE_REF


async def test_the_judge_sees_every_turn_the_expert_answer_and_the_submission(judge: FakeJudge) -> None:
    trial = record("complete-add-column-subtitle", final_answer=ANSWER)
    await factuality(trial, case("complete-add-column-subtitle"))
    (body,) = judge.bodies
    prompt = prompt_of(body)
    assert "User (first message): In my proj-test-123 project, add a subtitle column" in prompt
    assert "User (follow-up 1): Looks good, go ahead and apply it to main." in prompt
    assert "The temporary branch <temporary_branch_name> that was used to test it" in prompt
    assert ANSWER in prompt
    assert body["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
    assert [tool["function"]["name"] for tool in body["tools"]] == ["select_choice"]
    assert body["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"] == ["A", "B", "C", "D", "E"]
    assert body["temperature"] == 0 and body["model"] == DEFAULT_JUDGE_MODELS["openai"]
    assert judge.requests[0].headers["authorization"] == "Bearer sk-test-secret-value"


async def test_choice_can_differ_per_request(judge: FakeJudge) -> None:
    judge.chooser = lambda body: "D" if "already applied" in prompt_of(body) else "C"
    good = await factuality(
        record("add-column-description", final_answer="Staged; apply?"), case("add-column-description")
    )
    bad = await factuality(
        record("add-column-description", final_answer="I already applied it to main."), case("add-column-description")
    )
    assert (good.score, bad.score) == (1.0, 0.0) and len(judge.requests) == 2


async def test_model_comes_from_the_environment_and_no_key_is_logged(
    judge: FakeJudge, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("EVAL_JUDGE_MODEL", "claude-haiku-4-5")
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert judge.bodies[0]["model"] == "claude-haiku-4-5" and score.metadata["judge_model"] == "claude-haiku-4-5"
    assert score.metadata["judge_provider"] == "openai" and score.metadata["judge_base_url"] == judge.url
    assert "sk-test-secret-value" not in json.dumps(score.metadata)


async def test_judge_errors_are_none_with_judge_error_and_no_key(judge: FakeJudge) -> None:
    judge.status = 400
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert score.score is None and score.metadata["reason"].startswith("judge call failed: BadRequestError")
    assert score.metadata["judge_error"] == score.metadata["reason"]
    assert score.metadata["judge_template"] == TEMPLATE_REF
    assert "sk-test-secret-value" not in json.dumps(score.metadata)


async def test_a_choice_outside_the_template_is_a_judge_error(judge: FakeJudge) -> None:
    judge.choice = "F"
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert score.score is None and score.metadata["judge_error"].startswith("judge call failed: KeyError")


async def test_a_judge_that_never_answers_is_a_judge_error(judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(factuality_module, "JUDGE_DEADLINE_S", 0.2)
    judge.delay_s = 1.0
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert score.score is None and score.metadata["judge_error"] == "judge gave no verdict within 0.2s"


async def test_no_judge_configured_is_none_without_judge_error(clean_env: pytest.MonkeyPatch) -> None:
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert score.score is None and score.metadata["reason"] == NO_JUDGE_REASON
    assert "judge_error" not in score.metadata and score.metadata["judge_template"] == TEMPLATE_REF


async def test_infra_error_is_none_without_calling_the_judge(judge: FakeJudge) -> None:
    infra = await factuality(
        record("add-column-description", outcome="infra_error", error="overloaded"), case("add-column-description")
    )
    assert infra.score is None and "overloaded" in infra.metadata["reason"]
    assert "judge_error" not in infra.metadata and infra.metadata["judge_template"] == TEMPLATE_REF
    assert judge.requests == []


@pytest.mark.parametrize("outcome", ["turn_cap", "timeout", "max_tokens", "refusal", "context_window_exceeded"])
async def test_no_final_answer_scores_zero_with_the_reason(judge: FakeJudge, outcome: str) -> None:
    # model_copy: the outcomes a newer harness records need not be in this checkout's Literal yet.
    trial = record("add-column-description", final_answer="Let me check one more thing").model_copy(
        update={"outcome": outcome}
    )
    score = await factuality(trial, case("add-column-description"))
    assert score.score == 0.0 and score.metadata["outcome"] == outcome
    assert score.metadata["reason"] == factuality_module.NO_ANSWER_REASONS[outcome]
    assert score.metadata["judge_template"] == TEMPLATE_REF and judge.requests == []


async def test_no_answer_without_a_judge_is_na_with_the_reason(clean_env: pytest.MonkeyPatch) -> None:
    """No judge ran, so no score is given: a timeout is not 0 on factuality (the gate counts it instead)."""
    timeout = await factuality(record("add-column-description", outcome="timeout"), case("add-column-description"))
    empty = await factuality(record("add-column-description", final_answer="  "), case("add-column-description"))
    assert (timeout.score, empty.score) == (None, None)
    assert "no judge" in timeout.metadata["reason"].lower()
    assert "timed out" in timeout.metadata["reason"] and timeout.metadata["outcome"] == "timeout"
    assert "empty reply" in empty.metadata["reason"]


async def test_a_template_file_sets_prompt_scores_and_version(
    judge: FakeJudge, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = yaml.safe_load(BUNDLED_TEMPLATE.read_text())
    data.update(name="strict", version=7, choice_scores={**data["choice_scores"], "B": 0.5})
    data["prompt"] = "STRICT GRADER. " + data["prompt"]
    path = tmp_path / "strict.yaml"
    path.write_text(yaml.safe_dump(data))
    clean_env.setenv("EVAL_JUDGE_TEMPLATE", str(path))
    judge.choice = "B"
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert score.score == 0.5 and score.metadata["judge_template"] == "strict@7"
    assert judge.prompts[0].startswith("STRICT GRADER.")


async def test_a_broken_template_is_a_judge_error_naming_the_file(
    judge: FakeJudge, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nversion: 1\nprompt: no placeholders\nchoice_scores: {A: 1, B: 1, C: 1, D: 0}\n")
    clean_env.setenv("EVAL_JUDGE_TEMPLATE", str(path))
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert score.score is None and str(path) in score.metadata["judge_error"]
    assert "choice_scores" in score.metadata["judge_error"] and "{{input}}" in score.metadata["judge_error"]
    assert judge.requests == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[unclosed", "not valid YAML"),
        ("- a list", "expected a mapping"),
        (
            "name: x\nversion: 0\nprompt: '{{input}} {{expected}} {{output}}'\n"
            "choice_scores: {A: 1, B: 1, C: 1, D: 0, E: 2}",
            "version",
        ),
    ],
)
def test_template_errors_name_the_file_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(TemplateError, match=problem) as raised:
        load_template(path)
    assert str(path) in str(raised.value)
    with pytest.raises(TemplateError, match="cannot read"):
        load_template(tmp_path / "missing.yaml")


def test_the_bundled_template_is_versioned() -> None:
    template = load_template(BUNDLED_TEMPLATE)
    assert template.ref == TEMPLATE_REF and template.choice_scores == {"A": 0.4, "B": 0.8, "C": 1, "D": 0, "E": 1}


def test_routing_order_and_overrides() -> None:
    everything = {"BRAINTRUST_API_KEY": "bt", "ANTHROPIC_API_KEY": "an", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    braintrust = judge_settings(everything)
    assert braintrust and braintrust.provider == "braintrust" and braintrust.api_key == "bt"
    assert braintrust.base_url == "https://gateway.braintrust.dev"
    gateway = judge_settings({**everything, "BRAINTRUST_AI_GATEWAY_URL": "https://gw.example/v1"})
    assert gateway and gateway.base_url == "https://gw.example/v1"
    anthropic = judge_settings({"ANTHROPIC_API_KEY": "an", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert anthropic and (anthropic.provider, anthropic.base_url) == ("anthropic", ANTHROPIC_OPENAI_URL)
    compatible = judge_settings({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert compatible and compatible.provider == "openai" and compatible.api_key == "not-needed"
    forced = judge_settings({**everything, "EVAL_JUDGE_PROVIDER": "openai", "EVAL_JUDGE_MODEL": "m"})
    assert forced and (forced.provider, forced.model) == ("openai", "m")
    assert judge_settings({**everything, "EVAL_JUDGE_PROVIDER": "none"}) is None
    assert judge_settings({}) is None
    assert "bt" not in repr(braintrust) and "bt" not in json.dumps(braintrust.describe())
    with_credentials = judge_settings({"OPENAI_BASE_URL": "https://user:s3cret@judge.example:8443/v1?token=s3cret"})
    assert with_credentials and with_credentials.describe()["judge_base_url"] == "https://judge.example:8443/v1"
