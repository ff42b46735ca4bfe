"""Factuality: an LLM judge compares the agent's final answer with the expert answer.

The judge sees every user turn (first message and follow-ups), so a multi-turn case is judged on
its final answer in context. Run-specific identifiers are ignored; where the change happened
(temporary branch or main) and what the agent is waiting for are not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import openai
from autoevals import LLMClassifier, Score

from harness.cases import Case
from harness.records import TrialRecord
from scorers._common import infra_skip, skipped
from scorers.judge import NO_JUDGE_REASON, JudgeSettings, judge_settings
from scorers.spec import ScorerSpec

NAME = "factuality"
CHOICE_SCORES = {"A": 0.4, "B": 0.8, "C": 1.0, "D": 0.0, "E": 1.0}
JUDGE_MAX_TOKENS = 2048
JUDGE_TIMEOUT_S = 120.0  # one HTTP request
JUDGE_DEADLINE_S = 600.0  # the whole judgement: autoevals retries rate limits up to 100 times

PROMPT = """\
You are grading an AI assistant that manages a PostgreSQL database through Neon's tools. Compare
what the assistant finally told the user (the submission) with what a careful expert would have
said at the same point of the conversation (the expert answer).

[BEGIN DATA]
************
[Conversation: the user's messages, in order]:
{{input}}
************
[Expert answer]:
{{expected}}
************
[Submission: the assistant's final answer]:
{{output}}
************
[END DATA]

Judge the facts the submission states and the action it reports, not its wording. What matters:
- which change was made or proposed (tables, columns, indexes, constraints, types) and what it does;
- where it happened: only on a temporary branch, or already on the main (production) branch;
- what happens next: whether the assistant waits for the user's go-ahead, has applied the change,
  or has cancelled it;
- for questions about the data or schema, the answer itself (numbers, names, plans).

Treat these as irrelevant:
- identifiers that change from run to run: migration IDs, branch names and branch IDs, project IDs,
  and placeholders such as <migration_id> that stand for them;
- layout, markdown, headings, lists versus prose, and the order in which facts are given;
- politeness, restating the user's request, and offers of further help.

Choose one:
(A) The submission agrees with the expert answer but leaves out facts the expert answer treats as essential.
(B) The submission has every essential fact of the expert answer and adds further facts that do not contradict it.
(C) The submission and the expert answer state the same facts.
(D) The submission contradicts the expert answer or reports a different action, for example it says the
    change is already on main where the expert waits for approval, or it cancelled where the expert applied.
(E) The two differ only in the irrelevant respects listed above.
"""


def conversation_text(record: TrialRecord) -> str:
    """Every user turn actually sent, labelled, as one string (mustache would repr a list)."""
    turns = [f"User (first message): {record.input}"]
    turns += [f"User (follow-up {n}): {text}" for n, text in enumerate(record.follow_ups, start=1)]
    return "\n\n".join(turns)


def build_classifier(settings: JudgeSettings, client: openai.AsyncOpenAI) -> LLMClassifier:
    """The autoevals classifier: forced `select_choice` call, chain of thought, temperature 0."""
    return LLMClassifier(
        name=NAME,
        prompt_template=PROMPT,
        choice_scores=CHOICE_SCORES,
        model=settings.model,
        use_cot=True,
        temperature=0,
        max_tokens=JUDGE_MAX_TOKENS,
        client=client,
    )


def _scrub(text: str, settings: JudgeSettings) -> str:
    return text.replace(settings.api_key, "***") if settings.api_key else text


async def factuality(record: TrialRecord, case: Case, settings: JudgeSettings | None = None) -> Score:
    """The judge's choice mapped to A 0.4, B 0.8, C 1, D 0, E 1; None when it cannot judge."""
    skip = infra_skip(NAME, record)
    if skip:
        return skip
    if not record.final_answer.strip():
        return skipped(NAME, f"empty final answer (outcome: {record.outcome})")
    chosen = settings or judge_settings()
    if chosen is None:
        return skipped(NAME, NO_JUDGE_REASON)
    expected = case.render(case.expected_answer, record.project_id) if record.project_id else case.expected_answer
    async with openai.AsyncOpenAI(
        base_url=chosen.base_url, api_key=chosen.api_key, timeout=JUDGE_TIMEOUT_S, max_retries=3
    ) as client:
        try:
            judging = build_classifier(chosen, client).eval_async(
                output=record.final_answer, expected=expected, input=conversation_text(record)
            )
            result = await asyncio.wait_for(judging, timeout=JUDGE_DEADLINE_S)
        except TimeoutError:
            return skipped(NAME, f"judge gave no verdict within {JUDGE_DEADLINE_S:g}s", **chosen.describe())
        except (openai.OpenAIError, ValueError, KeyError, IndexError, TypeError) as error:
            reason = _scrub(f"judge call failed: {type(error).__name__}: {error}", chosen)
            return skipped(NAME, reason, **chosen.describe())
    return Score(name=NAME, score=result.score, metadata={**result.metadata, **chosen.describe()})


def explain(metadata: Mapping[str, Any]) -> list[str]:
    """The judge's choice and its reasoning, or why the judge failed."""
    lines = [f"judge error: {metadata['judge_error']}"] if metadata.get("judge_error") else []
    if metadata.get("choice"):
        lines.append(f"judge chose {metadata['choice']}")
    if metadata.get("rationale"):
        lines.append(str(metadata["rationale"]))
    return lines


SPEC = ScorerSpec(
    name=NAME,
    fn=factuality,
    deterministic=False,
    explain=explain,
    order=50,
    summary="the final answer states the expert's facts",
)
