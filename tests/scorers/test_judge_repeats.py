"""The judge asked again: every repeat a fresh request of its own, on each route a judge takes.

A judge's self-agreement means something only when each repeat reached the model: Braintrust's
gateway answers a request it has seen at `temperature: 0` from its cache (`x-bt-cached: HIT`), which
would make any judge look perfectly consistent. The stand-ins are real HTTP servers: `FakeJudge` for
an OpenAI-compatible endpoint and for Anthropic's (with Anthropic's refusal rules), `FakeBraintrust`
for the gateway with its cache.
"""

from __future__ import annotations

from scorers.factuality import classify, classify_repeatedly
from scorers.judge_client import judge_settings
from scorers.judge_template import load_template
from tests.fakes.braintrust_server import FakeBraintrust
from tests.fakes.openai_judge import FakeJudge
from tests.fakes.scripted_judge import repeat_chooser

CONVERSATION = "User (first message): Add a subtitle column to posts."
EXPECTED = "The subtitle column is staged on a temporary branch, waiting for your go-ahead."
SUBMISSION = "Staged: posts.subtitle marker-one is on a temporary branch; say the word and I apply it."
NO_CACHE = {"x-bt-use-cache": "never", "cache-control": "no-cache, no-store"}


async def test_each_repeat_is_a_request_of_its_own_asking_no_cache_to_answer() -> None:
    with FakeJudge(chooser=repeat_chooser({"*": {"marker-one": "CD"}})) as judge:
        settings = judge_settings(judge.env())
        assert settings is not None
        verdicts = await classify_repeatedly(CONVERSATION, EXPECTED, SUBMISSION, settings, load_template(), 2)
        requests = judge.requests
    assert [verdict.choice for verdict in verdicts] == ["C", "D"]  # the judge changed its mind, and it shows
    assert [verdict.score for verdict in verdicts] == [1.0, 0.0]
    assert len(requests) == 2 and requests[0].body == requests[1].body  # the same question, asked twice
    assert all(request.body["temperature"] == 0 for request in requests)  # at the judge's own temperature
    assert all({name: request.headers.get(name) for name in NO_CACHE} == NO_CACHE for request in requests)
    assert not any(verdict.cache_hit for verdict in verdicts)


async def test_the_anthropic_route_is_asked_again_too() -> None:
    """Anthropic's OpenAI-compatible endpoint: the route EVAL_JUDGE_PROVIDER=anthropic takes, with Claude Haiku 4.5."""
    with FakeJudge(chooser=repeat_chooser({"claude-haiku-4-5": {"marker-one": "E"}})) as judge:
        settings = judge_settings(
            {"EVAL_JUDGE_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": "ak-test", "ANTHROPIC_OPENAI_BASE_URL": judge.url}
        )
        assert settings is not None and settings.provider == "anthropic"
        verdicts = await classify_repeatedly(CONVERSATION, EXPECTED, SUBMISSION, settings, load_template(), 3)
        models = [body["model"] for body in judge.bodies]
        refused = list(judge.refused)
    assert [verdict.choice for verdict in verdicts] == ["E", "E", "E"] and not refused
    assert models == ["claude-haiku-4-5"] * 3


async def test_the_gateway_cache_would_repeat_the_first_answer_and_the_repeats_get_past_it() -> None:
    # The gateway's model would answer C, then D: asked as a trial is judged, the second answer is the
    # first one again from the gateway's cache; asked as the calibration asks, it is the model's own.
    with FakeBraintrust(judge_chooser=repeat_chooser({"*": {"marker-one": "CD"}})) as braintrust:
        settings = judge_settings({**braintrust.env(), "EVAL_JUDGE_PROVIDER": "braintrust"})
        assert settings is not None and settings.provider == "braintrust"
        template = load_template()
        plain = [await classify(CONVERSATION, EXPECTED, SUBMISSION, settings, template) for _ in range(2)]
        assert [(verdict.choice, verdict.cache_hit) for verdict in plain] == [("C", False), ("C", True)]
        assert braintrust.gateway_cache_hits == 1
        fresh = await classify_repeatedly(CONVERSATION, EXPECTED, SUBMISSION, settings, template, 2)
        assert braintrust.gateway_cache_hits == 1  # no repeat came from the cache
    assert [(verdict.choice, verdict.cache_hit) for verdict in fresh] == [("D", False), ("D", False)]
