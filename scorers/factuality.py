"""Factuality: an LLM judge compares the agent's final answer with the expert answer.

The judge sees every user turn (first message and follow-ups), so a multi-turn case is judged on
its final answer in context. Run-specific identifiers are ignored; where the change happened
(temporary branch or main) and what the agent is waiting for are not. The prompt and its choice
scores come from a versioned template file (`scorers/judge_template.py`); every score records it.

What is whose fault decides between 0 and n/a:
- the model gave no final answer (turn cap, timeout, a reply cut at max tokens, a refusal, an
  overflowing context, or an empty answer) and a judge is configured: 0, with the reason (the
  judge need not be asked);
- the infrastructure failed, or no judge is configured: n/a (None), with the reason: a score no
  judge produced is never given (the run gate counts trials without an answer instead);
- the judge call failed: n/a with `metadata["judge_error"]`, which the run gate counts.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoevals import LLMClassifier, Score

from harness.cases import Case
from harness.recording.records import TrialRecord
from scorers._common import infra_skip, skipped
from scorers.judge_client import JudgeSettings, judge_client, judge_settings, no_judge_reason, record_judge_usage
from scorers.judge_template import JudgeTemplate, TemplateError, load_template, template_files, template_path
from scorers.spec import ScorerSpec

if TYPE_CHECKING:
    import openai

NAME = "factuality"
JUDGE_MAX_TOKENS = 2048
JUDGE_TEMPERATURE = 0  # what autoevals' classifiers send; the judge's self-agreement is measured at it too
JUDGE_DEADLINE_S: float | None = None  # the whole judgement; None: the settings' (EVAL_JUDGE_TIMEOUT), for tests

# Outcomes where the model produced no final answer: its failure, so factuality is 0, not n/a.
NO_ANSWER_REASONS = {
    "turn_cap": "no final answer: the model was still calling tools when the turn cap was reached",
    "timeout": "no final answer: the trial timed out before the model answered",
    "max_tokens": "no final answer: the reply was cut off at the max_tokens limit",
    "refusal": "no final answer: the model refused",
    "context_window_exceeded": "no final answer: the conversation outgrew the model's context window",
}
ANSWERED_OUTCOMES = ("ok", "infra_error")


@dataclass(frozen=True)
class Verdict:
    """One judgement: the choice and its score, or the error that prevented it."""

    choice: str | None
    score: float | None
    rationale: str = ""
    error: str | None = None
    spent: dict[str, Any] = field(default_factory=dict)  # the judge's own tokens and cost
    cache_hit: bool = False  # a cache on the route answered (`x-bt-cached: HIT`), not the model


@cache
def _cached_template(path: Path) -> JudgeTemplate:
    return load_template(path)


def current_template() -> JudgeTemplate:
    """The template in use (EVAL_JUDGE_TEMPLATE or the bundled one), read once per path."""
    return _cached_template(template_path())


def render_conversation(first_message: str, follow_ups: Sequence[str]) -> str:
    """Every user turn, labelled, as one string (mustache would repr a list)."""
    turns = [f"User (first message): {first_message}"]
    turns += [f"User (follow-up {n}): {text}" for n, text in enumerate(follow_ups, start=1)]
    return "\n\n".join(turns)


def conversation_text(record: TrialRecord) -> str:
    """Every user turn actually sent in the trial."""
    return render_conversation(record.input, record.follow_ups)


def build_classifier(settings: JudgeSettings, client: openai.AsyncOpenAI, template: JudgeTemplate) -> LLMClassifier:
    """The autoevals classifier: forced `select_choice` call, chain of thought, JUDGE_TEMPERATURE."""
    return LLMClassifier(
        name=NAME,
        prompt_template=template.prompt,
        choice_scores=template.choice_scores,
        model=settings.model,
        use_cot=template.use_cot,
        temperature=JUDGE_TEMPERATURE,
        max_tokens=JUDGE_MAX_TOKENS,
        client=client,
    )


def _scrub(text: str, settings: JudgeSettings) -> str:
    return text.replace(settings.api_key, "***") if settings.api_key else text


async def classify(
    conversation: str, expected: str, submission: str, settings: JudgeSettings, template: JudgeTemplate
) -> Verdict:
    """Ask the judge once; a failed call comes back as a Verdict with `error` set, never raised."""
    import openai  # loaded only where a judge is used

    try:
        client, meter = judge_client(settings)  # counts the judge's own tokens and cost
    except ValueError as error:  # a judge setting no request can be built from (EVAL_JUDGE_TOOL_CHOICE)
        return Verdict(None, None, error=f"judge call failed: {error}")
    deadline = settings.deadline_s if JUDGE_DEADLINE_S is None else JUDGE_DEADLINE_S
    async with client:
        try:
            judging = build_classifier(settings, client, template).eval_async(
                output=submission, expected=expected, input=conversation
            )
            result = await asyncio.wait_for(judging, timeout=deadline)
        except TimeoutError:
            error_text = f"judge gave no verdict within {deadline:g}s"
            return Verdict(None, None, error=error_text, spent=meter.metadata(), cache_hit=meter.cache_hits > 0)
        except (openai.OpenAIError, ValueError, KeyError, IndexError, TypeError) as error:
            error_text = _scrub(f"judge call failed: {type(error).__name__}: {error}", settings)
            return Verdict(None, None, error=error_text, spent=meter.metadata(), cache_hit=meter.cache_hits > 0)
    metadata = result.metadata or {}
    rationale = str(metadata.get("rationale", ""))
    return Verdict(
        str(metadata.get("choice")),
        result.score,
        rationale=rationale,
        spent=meter.metadata(),
        cache_hit=meter.cache_hits > 0,
    )


async def classify_repeatedly(
    conversation: str,
    expected: str,
    submission: str,
    settings: JudgeSettings,
    template: JudgeTemplate,
    repeats: int,
) -> list[Verdict]:
    """Ask the judge `repeats` times, one after the other, each a request of its own.

    Why: a judge that answers one submission differently on another day gives a trial a score by
    chance; how often it agrees with itself is measured by asking again, at the same temperature.
    Every request asks the route's caches to answer afresh (`bypass_cache`): a cached first answer
    served again would make any judge look perfectly consistent. A new client per repeat, so no
    connection or state is shared; whether a cache answered anyway is on each verdict (`cache_hit`).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    fresh = dataclasses.replace(settings, bypass_cache=True)
    return [await classify(conversation, expected, submission, fresh, template) for _ in range(repeats)]


def _no_answer(record: TrialRecord) -> str | None:
    """Why the model gave no final answer, or None when it gave one (or infrastructure failed)."""
    if record.outcome not in ANSWERED_OUTCOMES:
        return NO_ANSWER_REASONS.get(record.outcome, f"no final answer (outcome: {record.outcome})")
    if record.outcome == "ok" and not record.final_answer.strip():
        return "no final answer: the model ended with an empty reply"
    return None


def _stamped(score: Score, template_ref: str) -> Score:
    """The same score with the template version in its metadata."""
    metadata = {**(score.metadata or {}), "judge_template": template_ref}
    return Score(name=score.name, score=score.score, metadata=metadata)


async def factuality(
    record: TrialRecord, case: Case, settings: JudgeSettings | None = None, template: JudgeTemplate | None = None
) -> Score:
    """The judge's choice mapped through the template's choice scores (A 0.4, B 0.8, C 1, D 0, E 1)."""
    try:
        chosen_template = template or current_template()
    except TemplateError as error:
        return skipped(NAME, str(error), judge_error=str(error))
    ref = chosen_template.ref
    skip = infra_skip(NAME, record)
    if skip:
        return _stamped(skip, ref)
    no_answer = _no_answer(record)
    chosen = settings or judge_settings()
    if chosen is None:  # no judge ran: nothing was scored, whatever the model did (the run gate counts no-answers)
        why = no_judge_reason()
        reason = f"{why} ({no_answer})" if no_answer else why
        return skipped(NAME, reason, judge_template=ref, outcome=record.outcome)
    if no_answer:
        zero_metadata = {"reason": no_answer, "outcome": record.outcome, "judge_template": ref}
        return Score(name=NAME, score=0.0, metadata=zero_metadata)
    expected = case.render(case.expected_answer, record.project_id) if record.project_id else case.expected_answer
    verdict = await classify(conversation_text(record), expected, record.final_answer, chosen, chosen_template)
    record_judge_usage(record, verdict.spent)
    described: dict[str, Any] = {**chosen.describe(), "judge_template": ref, **verdict.spent}
    if verdict.error is not None:
        return skipped(NAME, verdict.error, judge_error=verdict.error, **described)
    metadata: dict[str, Any] = {"choice": verdict.choice, "rationale": verdict.rationale, **described}
    return Score(name=NAME, score=verdict.score, metadata=metadata)


def explain(metadata: Mapping[str, Any]) -> list[str]:
    """The judge's choice and its reasoning, why the judge failed, or why no judge was needed."""
    lines = [f"judge error: {metadata['judge_error']}"] if metadata.get("judge_error") else []
    if metadata.get("choice"):
        lines.append(f"judge chose {metadata['choice']}")
    if metadata.get("rationale"):
        lines.append(str(metadata["rationale"]))
    if not lines and metadata.get("reason"):
        lines.append(str(metadata["reason"]))
    return lines


SPEC = ScorerSpec(
    name=NAME,
    fn=factuality,
    deterministic=False,
    explain=explain,
    order=50,
    summary="the final answer states the expert's facts",
    reads=template_files,  # the prompt and choice scores in use: part of the version
)
