"""The model-backed proposer: an LLM reads the train failures and rewrites the tools they get wrong.

Why a model: the offline operators (`tuning.proposer`) know seven edits; a model can read what the
agent actually did (its request, its calls, the checks it failed) and write the sentence a person
tuning descriptions would write. Why the care: whatever reaches the model can shape a candidate, so
its one request is built from train trials only, and a trial of any other part is refused (naming
the case and its part) before anything is sent; the acceptance rule and the confirmation split mean
nothing if the proposer has read them. Excerpts are short and scrubbed (the route's key, every key
of the environment, connection passwords), though records are redacted already.

The route is the factuality judge's (`scorers.judge_client.judge_settings`) unless EVAL_TUNE_PROVIDER
forces one (`braintrust`, `anthropic`, `openai`; `none`: no model proposer); EVAL_TUNE_MODEL names
the model (default: the judge's model on the judge's route, the route's default on a forced one);
EVAL_TUNE_TIMEOUT is one request's limit in seconds (default 300: one answer writes several
descriptions). The answer is JSON candidates, checked: a tool the surface lacks, an empty or
unchanged description, a duplicate or one past `limit` is dropped with a note; an answer that is
not the JSON asked for is a `ProposerAnswerError` naming the model and what was wrong.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from analysis.rescore import ScoredTrial
from analysis.summary import OVERALL
from harness.environment import positive_seconds
from harness.mcp.toolview import PARAMETER_SEPARATOR
from harness.models.rules import anthropic_rules, openai_rules, trial_cost_usd
from harness.recording.records import Usage
from harness.recording.redact import redact_connection_passwords
from scorers.judge_client import PLACEHOLDER_KEY, judge_settings, no_judge_reason
from tuning.proposer import Candidate
from tuning.splits import Splits

PROVIDER_VARIABLE = "EVAL_TUNE_PROVIDER"
MODEL_VARIABLE = "EVAL_TUNE_MODEL"
TIMEOUT_VARIABLE = "EVAL_TUNE_TIMEOUT"
PROVIDERS = ("braintrust", "anthropic", "openai")
DEFAULT_TIMEOUT_S = 300.0
MAX_RETRIES = 2
MAX_TOKENS = 8000  # the answer: a few whole descriptions and their rationales
OPERATOR = "model"

# How much of a trial the request carries: enough to see the mistake, too little to carry data.
MAX_TRIALS = 20  # failing trials shown, one per case first
ARGUMENTS_CHARS = 300
RESULT_CHARS = 160
CHECK_CHARS = 240
ANSWER_CHARS = 300
MAX_CHECKS = 6
MAX_CALLS = 12
SAID_CHARS = 200
MAX_SAID = 4
SECRET_NAME = re.compile(r"(API_KEY|_KEY|TOKEN|SECRET|PASSWORD)$")
MIN_SECRET_CHARS = 8  # shorter values (`local`, `1`) would scrub ordinary words
SCRUBBED = "[REDACTED]"
NAME = re.compile(r"[^A-Za-z0-9_.+-]+")

Note = Callable[[str], None]


class ProposerAnswerError(ValueError):
    """The model's answer is not the JSON asked for, or the route refused the request: named, never an empty list."""


@dataclass(frozen=True)
class ProposerRoute:
    """Where the model proposer's request goes: an OpenAI-compatible endpoint, its key, the model."""

    provider: str
    base_url: str
    model: str
    api_key: str = field(repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    # Values never to send: every key-like variable of the environment the route was read from.
    secrets: tuple[str, ...] = field(default=(), repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ProposerRoute | None:
        """The route from the environment mapping given, or None (no model proposer: the offline one).

        The judge's route by default; EVAL_TUNE_PROVIDER forces one, even one the judge would pass over
        as the model under test's own endpoint (the proposer writes descriptions, it judges nothing).
        A value that cannot work is a ValueError naming the variable."""
        forced = env.get(PROVIDER_VARIABLE, "").strip().lower()
        if forced and forced not in (*PROVIDERS, "none"):
            raise ValueError(f"{PROVIDER_VARIABLE}={forced!r} is not one of {', '.join(PROVIDERS)}, none")
        if forced == "none":
            return None
        timeout = _timeout(env)
        source = dict(env)
        if forced:  # the forced route's own default model: the judge's model may not exist there
            source["EVAL_JUDGE_PROVIDER"] = forced
            source.pop("EVAL_JUDGE_MODEL", None)
        judge = judge_settings(source)
        if judge is None:
            return None
        model = env.get(MODEL_VARIABLE, "").strip() or judge.model
        secrets = {
            value.strip()
            for name, value in env.items()
            if SECRET_NAME.search(name) and len(value.strip()) >= MIN_SECRET_CHARS
        }
        secrets |= {judge.api_key} if len(judge.api_key) >= MIN_SECRET_CHARS else set()
        return cls(judge.provider, judge.base_url, model, judge.api_key, timeout, tuple(sorted(secrets)))

    def describe(self) -> dict[str, str]:
        """What may be printed or recorded about the route: never the key, nor credentials in the URL."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return {
            "proposer_provider": self.provider,
            "proposer_base_url": urlunsplit((parts.scheme, netloc, parts.path, "", "")),
            "proposer_model": self.model,
        }

    def scrub(self, text: str) -> str:
        """`text` with every secret of the route's environment and every connection password replaced."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, SCRUBBED)
        return redact_connection_passwords(text)

    @property
    def label(self) -> str:
        """The route in words, for errors and notes."""
        return f"proposer model {self.model} on the {self.provider} route ({self.describe()['proposer_base_url']})"


def no_route_reason(env: Mapping[str, str]) -> str:
    """Why `ProposerRoute.from_env(env)` gives no route, in words that name what to set."""
    forced = env.get(PROVIDER_VARIABLE, "").strip().lower()
    if forced == "none":
        return f"no model proposer: {PROVIDER_VARIABLE}=none"
    if forced:
        return f"no model proposer: {PROVIDER_VARIABLE}={forced} but its key or URL is not set"
    judge = no_judge_reason(env)
    return f"no model proposer: it takes the judge's route, and there is none ({judge}; or set {PROVIDER_VARIABLE})"


def _timeout(env: Mapping[str, str]) -> float:
    return positive_seconds(env, TIMEOUT_VARIABLE, DEFAULT_TIMEOUT_S)


# --- the request ------------------------------------------------------------------------------------


def refuse_other_parts(trained: Mapping[tuple[str, int], ScoredTrial], splits: Splits) -> None:
    """A ValueError naming the first trial whose case is not in the train part (or in no part)."""
    for (case_id, trial_index), trial in sorted(trained.items()):
        for named in dict.fromkeys((case_id, trial.record.case_id, trial.case.id)):
            try:
                part = splits.part_of(named)
            except KeyError:
                part = "no"
            if part != "train":
                raise ValueError(
                    f"case {named!r} (trial {trial_index}) is in the {part} part: the proposer sees train only"
                )


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _excerpt(text: str, limit: int, route: ProposerRoute) -> str:
    """`text` scrubbed, then cut: cut first, a secret split at the cut (a connection string missing its
    `@host`) no longer looks like one to the scrubber, and its first part would be sent."""
    return _cut(route.scrub(text), limit)


def failed_checks(trial: ScoredTrial, route: ProposerRoute) -> list[str]:
    """What failed, in the scorers' own words: each failed check of a score that lists them, else its reason."""
    found: list[str] = []
    for name, verdict in trial.verdicts.items():
        score = trial.scores.get(name)
        if verdict is not False or score is None:
            continue
        metadata = score.metadata or {}
        checks = metadata.get("failed_checks")
        if isinstance(checks, list) and checks:
            found += [f"{name}: {check}" for check in checks]
        else:
            found.append(f"{name}: {metadata.get('reason') or 'failed'}")
    if trial.record.outcome != "ok":
        found.append(f"outcome {trial.record.outcome}: {trial.record.error or ''}".rstrip(": "))
    return [_excerpt(check, CHECK_CHARS, route) for check in found[:MAX_CHECKS]]


def _shown(failing: Sequence[tuple[tuple[str, int], ScoredTrial]]) -> list[tuple[tuple[str, int], ScoredTrial]]:
    """At most MAX_TRIALS failing trials: each case's first one, then the others, by case id."""
    first: dict[str, tuple[str, int]] = {}
    for key, _ in sorted(failing):
        first.setdefault(key[0], key)
    ordered = sorted(failing, key=lambda item: (first[item[0][0]] != item[0], item[0]))
    return ordered[:MAX_TRIALS]


def _said(messages: Sequence[Mapping[str, Any]], route: ProposerRoute) -> list[str]:
    """The agent's own text between its calls (the transcript's assistant text), trimmed."""
    said: list[str] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        said += [
            _excerpt(str(block.get("text", "")), SAID_CHARS, route)
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text" and str(block.get("text", "")).strip()
        ]
    return said[:MAX_SAID]


def _scrubbed(value: Any, route: ProposerRoute) -> Any:
    """Every string inside `value` scrubbed (`ProposerRoute.scrub`)."""
    if isinstance(value, str):
        return route.scrub(value)
    if isinstance(value, list):
        return [_scrubbed(item, route) for item in value]
    if isinstance(value, dict):
        return {key: _scrubbed(item, route) for key, item in value.items()}
    return value


def trial_excerpt(trial: ScoredTrial, route: ProposerRoute) -> dict[str, Any]:
    """One failing train trial as the model reads it: the request, what the agent said and called, its
    answer, what failed; every excerpt short and scrubbed."""
    record, case = trial.record, trial.case
    calls = [
        {
            "tool": call.name,
            "arguments": _excerpt(json.dumps(call.arguments, sort_keys=True, default=str), ARGUMENTS_CHARS, route),
            **({"error": True} if call.is_error else {}),
            **({"result": _excerpt(call.result_text, RESULT_CHARS, route)} if call.result_text else {}),
        }
        for call in record.tool_calls[:MAX_CALLS]
    ]
    excerpt: dict[str, Any] = {
        "case": record.case_id,
        "trial": record.trial_index,
        "request": record.input,
        "follow_ups": list(record.follow_ups),
        "case_needs": list(case.required_tools),
        "case_forbids": list(case.forbidden_tools),
        "agent_said": _said(record.messages, route),
        "tool_calls": calls,
        "calls_not_shown": max(0, len(record.tool_calls) - MAX_CALLS),
        "final_answer": _excerpt(record.final_answer, ANSWER_CHARS, route),
        "failed": failed_checks(trial, route),
    }
    return cast(dict[str, Any], _scrubbed(excerpt, route))


INSTRUCTIONS = """You improve the tool descriptions of an MCP server for a database. An AI agent chose \
its tools by these descriptions, and failed the trials below. Rewrite the descriptions of the tools the \
failures point at so that an agent reading them picks the right tool in the right order.

Rules:
- Say what each tool does, when to use it and when not to, and which tool to use instead. Be accurate: \
never claim a tool does something it does not.
- No persuasion: no wording that makes a tool sound like the answer to everything ("always", "the best", \
"the only way"). A candidate that draws the agent to a tool where it is the wrong one is refused, and so \
is one that wins some kinds of request and loses others.
- Keep each description about as long as it is now, or shorter.
- Each candidate is one idea; different candidates try different ideas.

Where the failures point at a parameter (the agent passed a name where an id was wanted, left out \
the database, put DDL in the wrong argument), rewrite that parameter's description instead: its key is \
"<tool name>.<parameter name>", as in parameter_descriptions_now.

Answer with JSON only, no prose around it:
{"candidates": [{"name": "short-slug", "descriptions": {"<tool name>": "<the whole new description>"}, \
"rationale": "one sentence"}]}
"""


def build_request(
    current: Mapping[str, str],
    trained: Mapping[tuple[str, int], ScoredTrial],
    limit: int,
    route: ProposerRoute,
) -> dict[str, Any]:
    """The chat completion request: the instructions, the tools, the failing train trials. Train only:
    the caller has refused every other part (`refuse_other_parts`)."""
    failing = [(key, trial) for key, trial in sorted(trained.items()) if trial.verdicts.get(OVERALL) is False]
    shown = _shown(failing)
    involved: dict[str, None] = {}
    for _, trial in shown:
        for tool in [
            *(call.name for call in trial.record.tool_calls),
            *trial.case.required_tools,
            *trial.case.forbidden_tools,
        ]:
            if tool in current:
                involved.setdefault(tool)
    evidence = {
        "every_tool": sorted(key for key in current if PARAMETER_SEPARATOR not in key),
        "descriptions_now": {tool: current[tool] for tool in sorted(involved)},
        "parameter_descriptions_now": {
            key: text
            for key, text in sorted(current.items())
            if PARAMETER_SEPARATOR in key and key.split(PARAMETER_SEPARATOR, 1)[0] in involved
        },
        "train_trials": len(trained),
        "failing_trials": len(failing),
        "failing_trials_shown": [trial_excerpt(trial, route) for _, trial in shown],
    }
    user = (
        f"Propose at most {limit} candidate(s). Name only tools from every_tool; give each rewritten "
        f"tool's whole new description.\n\n{json.dumps(evidence, indent=1, ensure_ascii=False)}"
    )
    return {
        "model": route.model,
        "messages": [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": route.scrub(user)}],
        "max_tokens": MAX_TOKENS,
    }


# --- the answer -------------------------------------------------------------------------------------

FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_answer(text: str, route: ProposerRoute, cut: bool = False) -> list[Any]:
    """The answer's list of candidates; anything but `{"candidates": [...]}` (or a bare list) is an error
    naming the model and what was wrong."""
    where = route.label
    excerpt = json.dumps(_excerpt(text, 200, route), ensure_ascii=False)
    if not text.strip():
        raise ProposerAnswerError(f"{where} answered with no text")
    fenced = FENCE.search(text)
    body = fenced.group(1) if fenced else text
    try:
        parsed = json.loads(body)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        try:
            parsed = json.loads(body[start : end + 1]) if 0 <= start < end else None
        except ValueError:
            parsed = None
        if parsed is None:
            why = " (the answer was cut at max_tokens)" if cut else ""
            raise ProposerAnswerError(f"{where} answered with no JSON object{why}: {excerpt}") from None
    if isinstance(parsed, dict):
        listed = parsed.get("candidates")
        if not isinstance(listed, list):
            raise ProposerAnswerError(
                f"{where} answered JSON without a list under 'candidates' (keys: {sorted(parsed)}): {excerpt}"
            )
        return listed
    if isinstance(parsed, list):
        return parsed
    raise ProposerAnswerError(f"{where} answered JSON that is a {type(parsed).__name__}, not candidates: {excerpt}")


def _slug(value: object, number: int) -> str:
    text = NAME.sub("-", str(value or "")).strip("-.")[:48]
    return f"model-{text or number}"


def candidates_from(listed: Sequence[Any], current: Mapping[str, str], limit: int, note: Note) -> list[Candidate]:
    """The answer's candidates, checked against the surface; every drop comes with a note."""
    made: list[Candidate] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for number, entry in enumerate(listed, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("descriptions"), dict):
            note(f"candidate {number} dropped: not an object with a 'descriptions' mapping")
            continue
        name = _slug(entry.get("name"), number)
        rewritten: dict[str, str] = {}
        for tool, text in cast(dict[Any, Any], entry["descriptions"]).items():
            if tool not in current:
                note(f"{name}: tool {str(tool)!r} dropped: the server has no such tool")
            elif not isinstance(text, str) or not text.strip():
                note(f"{name}: {tool} dropped: its description is empty")
            elif " ".join(text.split()) == " ".join(current[tool].split()):
                note(f"{name}: {tool} dropped: its description is unchanged")
            else:
                rewritten[str(tool)] = text.strip()
        key = tuple(sorted(rewritten.items()))
        if not rewritten:
            note(f"{name} dropped: it changes no tool's description")
        elif key in seen:
            note(f"{name} dropped: the same rewrite as an earlier candidate")
        elif len(made) >= limit:
            note(f"{name} dropped: past the limit of {limit} candidate(s)")
        else:
            while name in {candidate.name for candidate in made}:
                name += "-again"
            seen.add(key)
            made.append(Candidate(name, rewritten, (OPERATOR,)))
            if entry.get("rationale"):
                note(f"{name}: {_cut(str(entry['rationale']), 300)}")
    return made


def _stderr(line: str) -> None:
    print(f"tune: proposer: {line}", file=sys.stderr, flush=True)


def _server_message(error: Any) -> str:
    """The server's own words in an OpenAI-shaped error body, else the SDK's message."""
    body = error.body
    inner = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(inner, dict) and inner.get("message"):
        return str(inner["message"])
    return str(error.message)


@dataclass(frozen=True)
class Answer:
    """What the route answered: the text, whether max_tokens cut it, and its cost where the model has a
    price and the answer came from the model asked for (never a guess: None otherwise)."""

    text: str
    cut: bool
    cost_usd: float | None


def answer_cost(route: ProposerRoute, answered_by: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    rules = anthropic_rules(route.model) if route.model.startswith("claude-") else openai_rules(route.model)
    usage = Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens, model_calls=1)
    return trial_cost_usd(route.model, rules, usage, [answered_by] if answered_by else [])


def ask(request: Mapping[str, Any], route: ProposerRoute) -> Answer:
    """Send the request; the answer (`Answer`). A refusal or an unreachable route is a
    ProposerAnswerError with the server's words, the key scrubbed."""
    import openai

    client = openai.OpenAI(
        base_url=route.base_url,
        api_key=route.api_key or PLACEHOLDER_KEY,
        timeout=route.timeout_s,
        max_retries=MAX_RETRIES,
    )
    try:
        with client:
            response = client.chat.completions.create(**request)
    except openai.APIStatusError as error:
        raise ProposerAnswerError(
            f"{route.label} refused the request: HTTP {error.status_code}: {route.scrub(_server_message(error))}"
        ) from None
    except openai.OpenAIError as error:
        raise ProposerAnswerError(f"{route.label} failed: {type(error).__name__}: {route.scrub(str(error))}") from None
    if not response.choices:
        raise ProposerAnswerError(f"{route.label} answered with no choices")
    choice = response.choices[0]
    used = response.usage
    cost = answer_cost(route, str(response.model or ""), used.prompt_tokens, used.completion_tokens) if used else None
    return Answer(str(choice.message.content or ""), choice.finish_reason == "length", cost)


PREFLIGHT = 'Answer with exactly this JSON and nothing else: {"candidates": []}'


def preflight(route: ProposerRoute) -> None:
    """Ask the route one tiny question before any trial runs, so a refusing route (a wrong key, a model
    the route lacks, a server that is down) stops the run at its start, not after the train run. The
    answer must be the JSON asked for (`parse_answer`); its content is not used."""
    request = {"model": route.model, "messages": [{"role": "user", "content": PREFLIGHT}], "max_tokens": 64}
    answer = ask(request, route)
    parse_answer(answer.text, route, answer.cut)


def propose_with_model(
    current: Mapping[str, str],
    trained: Mapping[tuple[str, int], ScoredTrial],
    splits: Splits,
    limit: int,
    route: ProposerRoute,
    note: Note | None = None,
    spent: Callable[[float], None] | None = None,
) -> list[Candidate]:
    """Candidates a model writes from the failing train trials, at most `limit`, each `operators=("model",)`.

        `current` is every tool's description as the incumbent has it; `trained` the train run's trials
        (`tuning.evidence.scored_run`). A trial of a case outside the train part is refused (ValueError
        naming it) before anything is sent. A limit under 1 asks nothing; so does no failing trial, and
        the note says so. `note` hears every dropped tool or candidate and each rationale (default: stderr);
    `spent` hears the request's cost where the model has a price (the loop adds it to the run's spend)."""
    say = note or _stderr
    refuse_other_parts(trained, splits)
    if limit < 1:
        return []
    if not any(trial.verdicts.get(OVERALL) is False for trial in trained.values()):
        say("no failing train trial: nothing for the model to read, nothing asked")
        return []
    answer = ask(build_request(current, trained, limit, route), route)
    if answer.cost_usd is not None:
        say(f"{route.label}: the proposal cost ${answer.cost_usd:.4f}")
        if spent is not None:
            spent(answer.cost_usd)
    listed = parse_answer(answer.text, route, answer.cut)
    made = candidates_from(listed, current, limit, say)
    if listed and not made:
        say(f"{route.label} proposed {len(listed)} candidate(s), none usable (each reason above)")
    return made
