"""Where the factuality judge runs: `JudgeSettings`, from the variables below.

Read from a mapping given, else from the process environment's one snapshot
(`harness.environment.process_env`: read once per process, so every scoring call sees the same judge).

Routing, first match wins (or forced with EVAL_JUDGE_PROVIDER=braintrust|anthropic|openai|none):
1. BRAINTRUST_API_KEY: Braintrust's AI gateway (autoevals' default URL, override with
   BRAINTRUST_AI_GATEWAY_URL). It calls Claude with the Anthropic key added as an AI provider in
   the Braintrust organization (Settings > AI providers); without one it refuses every request.
2. ANTHROPIC_API_KEY: Anthropic's OpenAI-compatible endpoint: ANTHROPIC_OPENAI_BASE_URL, else
   `<ANTHROPIC_BASE_URL>/v1/` when a proxy is set for the model, else Anthropic's own.
3. OPENAI_BASE_URL (+ OPENAI_API_KEY, any value for servers that ignore it): that endpoint.
The model is EVAL_JUDGE_MODEL, else the route's default. Each HTTP request may take
EVAL_JUDGE_TIMEOUT seconds (default 120; a judge on a CPU needs more), and a whole judgement, retries
included, as long as every attempt takes (at least 600 s). autoevals' LLMClassifier forces a
`select_choice` function call at `temperature: 0`: Claude 5.x models refuse the temperature and
Sonnet/Opus 5.5 refuse forced tool use, so the Claude routes default to Claude Haiku 4.5, which
takes both; the OpenAI route never defaults to a Claude id. `preflight()` asks the configured
route one tiny classification before the first trial, so a refusing route stops the run instead
of scoring every trial n/a. It also forces a call the model would not make unforced (the prompt asks
for another tool): a route that ignores forced tool choice (llama-server takes `tool_choice` only as
a string and turns autoevals' object into `auto`) answers with the other tool or with text, and is
refused, as one lucky classification would hide it. EVAL_JUDGE_TOOL_CHOICE (`function`, `required`,
`json_schema`; scorers/judge_request.py) asks for the forced call in a form such a server honours;
`judge_client` is the one place it is applied, and the preflight refuses an unknown value.

The judge never quietly becomes the model under test: when its endpoint is the one the model under
test is reached at (a local server answers to any model name), a route found by itself is passed
over (with only `OPENAI_BASE_URL` set for a local model there is then no judge, and the first lines
say why), and a route forced with EVAL_JUDGE_PROVIDER stops the run at start, unless
EVAL_JUDGE_SHARED_ENDPOINT=1 says to judge with it anyway (then a line says so). The metadata names
the model the responses named (`judge_answered_by`), and the judge's cost is priced only when that
is the model asked for (never a guess). Keys are never logged: `describe()` leaves them out.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlsplit, urlunsplit

import httpx2
from autoevals import LLMClassifier
from autoevals.oai import GATEWAY_URL

from harness.environment import positive_seconds, process_env
from harness.models.endpoint import endpoint_key
from harness.models.rules import ModelRules, anthropic_rules, openai_rules, trial_cost_usd
from harness.recording.records import TrialRecord, Usage
from scorers.judge_request import DEFAULT_MODE, ToolChoiceModeError, ToolChoiceTransport, parse_mode
from scorers.judge_request import VARIABLE as TOOL_CHOICE_VARIABLE

if TYPE_CHECKING:  # the SDK is imported where a judge is used: a run without one never loads it
    import openai

DEFAULT_JUDGE_MODELS = {"braintrust": "claude-haiku-4-5", "anthropic": "claude-haiku-4-5", "openai": "gpt-4.1-mini"}
DEFAULT_JUDGE_MODEL = DEFAULT_JUDGE_MODELS["anthropic"]
ANTHROPIC_OPENAI_URL = "https://api.anthropic.com/v1/"
NO_JUDGE_REASON = "no judge configured (set BRAINTRUST_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL)"
PLACEHOLDER_KEY = "not-needed"
# A judge asked the same thing twice must be asked twice. Braintrust's gateway caches a chat completion
# at `temperature: 0` (what autoevals sends) unless told not to: `x-bt-use-cache: never` turns its cache
# off, `Cache-Control: no-cache, no-store` neither reads nor writes it (braintrust-proxy,
# packages/proxy/src/proxy.ts), and it marks an answer from the cache `x-bt-cached: HIT`.
NO_CACHE_HEADERS = {"x-bt-use-cache": "never", "cache-control": "no-cache, no-store"}
CACHED_HEADERS = ("x-bt-cached", "x-cached")  # the gateway's mark of an answer served from its cache (and the old one)
TIMEOUT_VARIABLE = "EVAL_JUDGE_TIMEOUT"
DEFAULT_TIMEOUT_S = 120.0  # one HTTP request
MAX_RETRIES = 3  # the SDK's retries of one request, each starting over with the whole timeout
MIN_DEADLINE_S = 600.0  # the whole judgement: autoevals retries rate limits up to 100 times
# The variable a forced route reads its endpoint or key from: what is missing when it gives no judge.
ROUTE_VARIABLES = {"braintrust": "BRAINTRUST_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_BASE_URL"}

Provider = Literal["braintrust", "anthropic", "openai"]
_PROVIDERS: tuple[Provider, ...] = ("braintrust", "anthropic", "openai")


SHARED_ENDPOINT_VARIABLE = "EVAL_JUDGE_SHARED_ENDPOINT"
FORCED_TOOL = "select_choice"
UNFORCED_TOOL = "skip_classification"


class JudgePreflightError(RuntimeError, ValueError):
    """The configured judge route cannot judge: the run stops at start (exit 2, one line).

    A ValueError too, so the start-up guard (braintrust_run/guard.py) stops the run cleanly with it."""


@dataclass(frozen=True)
class JudgeSettings:
    """An OpenAI-compatible endpoint, its key and the judge model."""

    provider: Provider
    base_url: str
    model: str
    api_key: str = field(repr=False)
    tool_choice: str = DEFAULT_MODE  # EVAL_JUDGE_TOOL_CHOICE as set; checked by the preflight and judge_client
    timeout_s: float = DEFAULT_TIMEOUT_S  # EVAL_JUDGE_TIMEOUT: one HTTP request
    bypass_cache: bool = False  # ask every response cache on the route to answer afresh (repeated judgements)

    @property
    def deadline_s(self) -> float:
        """How long one judgement may take: every attempt of a request its whole timeout, and never
        under MIN_DEADLINE_S (autoevals' own rate-limit retries)."""
        return max(MIN_DEADLINE_S, (MAX_RETRIES + 1) * self.timeout_s)

    def describe(self) -> dict[str, str]:
        """What may be logged about the judge: never the key, nor credentials inside the URL."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        public_url = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        return {
            "judge_provider": self.provider,
            "judge_base_url": public_url,
            "judge_model": self.model,
            "judge_tool_choice": self.tool_choice,
        }

    @property
    def rules(self) -> ModelRules:
        """The judge model's rules (for its price): Claude ids on every route that serves them."""
        return anthropic_rules(self.model) if self.model.startswith("claude-") else openai_rules(self.model)


def _anthropic_openai_url(env: Mapping[str, str]) -> str:
    explicit = env.get("ANTHROPIC_OPENAI_BASE_URL", "").strip()
    if explicit:
        return explicit
    proxy = env.get("ANTHROPIC_BASE_URL", "").strip()
    return proxy.rstrip("/") + "/v1/" if proxy else ANTHROPIC_OPENAI_URL


def judge_timeout(env: Mapping[str, str]) -> float:
    """EVAL_JUDGE_TIMEOUT in seconds (default 120); anything but a number above 0 is a ValueError
    naming the variable, which stops the run before its first trial."""
    return positive_seconds(env, TIMEOUT_VARIABLE, DEFAULT_TIMEOUT_S)


def _settings_for(provider: Provider, env: Mapping[str, str], model: str | None) -> JudgeSettings | None:
    chosen = model or DEFAULT_JUDGE_MODELS[provider]
    asking = env.get(TOOL_CHOICE_VARIABLE, "").strip().lower() or DEFAULT_MODE
    timeout = judge_timeout(env)
    if provider == "braintrust":
        key = env.get("BRAINTRUST_API_KEY", "").strip()
        url = env.get("BRAINTRUST_AI_GATEWAY_URL", "").strip() or GATEWAY_URL
        return JudgeSettings(provider, url, chosen, key, asking, timeout) if key else None
    if provider == "anthropic":
        key = env.get("ANTHROPIC_API_KEY", "").strip()
        return JudgeSettings(provider, _anthropic_openai_url(env), chosen, key, asking, timeout) if key else None
    url = env.get("OPENAI_BASE_URL", "").strip()
    key = env.get("OPENAI_API_KEY", "").strip() or PLACEHOLDER_KEY
    return JudgeSettings(provider, url, chosen, key, asking, timeout) if url else None


def judge_settings(env: Mapping[str, str] | None = None) -> JudgeSettings | None:
    """The judge to use, or None when none is configured (the factuality score is then skipped).

    A route found by itself (not forced with EVAL_JUDGE_PROVIDER) is passed over when it is the endpoint
    of the model under test: with `EVAL_MODEL=openai:<name> OPENAI_BASE_URL=<a local server>` the only
    route would have the model judge its own answers, so there is no judge, and `no_judge_reason` says why
    (EVAL_JUDGE_SHARED_ENDPOINT=1 keeps it)."""
    source = process_env() if env is None else env
    model = source.get("EVAL_JUDGE_MODEL", "").strip() or None
    forced = source.get("EVAL_JUDGE_PROVIDER", "").strip().lower()
    if forced == "none":
        return None
    if forced in _PROVIDERS:
        return _settings_for(cast(Provider, forced), source, model)
    for provider in _PROVIDERS:
        settings = _settings_for(provider, source, model)
        if settings and not _passed_over(settings, source):
            return settings
    return None


def _passed_over(settings: JudgeSettings, env: Mapping[str, str]) -> str | None:
    """The model under test whose endpoint a route found by itself would judge on (None: it may judge)."""
    shared = shared_endpoint(settings, env)
    return shared if shared is not None and not _allowed(env.get(SHARED_ENDPOINT_VARIABLE, "")) else None


def no_judge_reason(env: Mapping[str, str] | None = None) -> str:
    """Why `judge_settings(env)` gives no judge, in words that name what to change: the
    EVAL_JUDGE_PROVIDER that turned it off or forced a route without its variable, a route passed over
    because it is the model under test's own endpoint, else every route."""
    source = process_env() if env is None else env
    forced = source.get("EVAL_JUDGE_PROVIDER", "").strip().lower()
    if forced == "none":
        return "no judge configured: EVAL_JUDGE_PROVIDER=none turned the judge off"
    if forced in ROUTE_VARIABLES:
        return f"no judge configured: EVAL_JUDGE_PROVIDER={forced} but {ROUTE_VARIABLES[forced]} is not set"
    model = source.get("EVAL_JUDGE_MODEL", "").strip() or None
    for provider in _PROVIDERS:
        settings = _settings_for(provider, source, model)
        shared = _passed_over(settings, source) if settings else None
        if settings and shared:
            return (
                f"no judge: the judge route {provider} ({settings.describe()['judge_base_url']}) is the endpoint "
                f"of the model under test {shared}, which would judge its own answers, so the judge is off; "
                f"to judge, point EVAL_JUDGE_PROVIDER at another route (or set {SHARED_ENDPOINT_VARIABLE}=1 to judge "
                "with it anyway)"
            )
    return NO_JUDGE_REASON


@dataclass
class JudgeMeter:
    """Tokens the judge's endpoint reported for the requests of one client, and their price."""

    settings: JudgeSettings
    usage: Usage = field(default_factory=Usage)
    answered_by: list[str] = field(default_factory=list)  # the model names the responses gave
    cache_hits: int = 0  # answers a cache on the route served instead of the model (`x-bt-cached: HIT`)

    async def observe(self, response: httpx2.Response) -> None:
        """httpx response hook: add the `usage` of a chat completion answer."""
        if response.status_code != 200 or not response.url.path.endswith("/chat/completions"):
            return
        if any(response.headers.get(name, "").strip().upper() == "HIT" for name in CACHED_HEADERS):
            self.cache_hits += 1
        await response.aread()
        try:
            body = response.json()
        except ValueError:
            return
        if not isinstance(body, dict):
            return
        reported = body.get("usage") or {}
        answered = body.get("model")
        if isinstance(answered, str) and answered and answered not in self.answered_by:
            self.answered_by.append(answered)
        details = reported.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0)
        self.usage.add(
            Usage(
                input_tokens=int(reported.get("prompt_tokens") or 0) - cached,
                cache_read_input_tokens=cached,
                output_tokens=int(reported.get("completion_tokens") or 0),
                model_calls=1,
            )
        )

    def metadata(self) -> dict[str, Any]:
        """The judge's own tokens and cost, for the factuality score's metadata."""
        return {
            "judge_input_tokens": self.usage.prompt_tokens,
            "judge_output_tokens": self.usage.output_tokens,
            "judge_calls": self.usage.model_calls,
            "judge_answered_by": list(self.answered_by),
            "judge_cost_usd": trial_cost_usd(self.settings.model, self.settings.rules, self.usage, self.answered_by),
        }


def judge_client(settings: JudgeSettings, max_retries: int = MAX_RETRIES) -> tuple[openai.AsyncOpenAI, JudgeMeter]:
    """An async OpenAI client for the judge route, and the meter counting what it spends.

    The one place the judge's requests are built: EVAL_JUDGE_TOOL_CHOICE other than `function`
    puts `ToolChoiceTransport` under the SDK (scorers/judge_request.py); `bypass_cache` adds
    NO_CACHE_HEADERS to every request. An unknown mode raises.
    """
    import openai

    meter = JudgeMeter(settings)
    mode = parse_mode(settings.tool_choice)
    transport = None if mode == DEFAULT_MODE else ToolChoiceTransport(mode)
    http = openai.DefaultAsyncHttpxClient(
        event_hooks={"response": [meter.observe]}, timeout=settings.timeout_s, transport=transport
    )
    client = openai.AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout_s,
        max_retries=max_retries,
        http_client=http,
        default_headers=NO_CACHE_HEADERS if settings.bypass_cache else None,
    )
    return client, meter


def _scrub(text: str, settings: JudgeSettings) -> str:
    return text.replace(settings.api_key, "***") if settings.api_key else text


def _server_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(error.message)


PREFLIGHT_ANSWER = "2"  # the preflight's submission and expert answer


def preflight_classifier(model: str, client: openai.AsyncOpenAI | None) -> LLMClassifier:
    """The preflight's tiny classification (the factuality choices), as autoevals asks it."""
    return LLMClassifier(
        name="judge_preflight",
        prompt_template=(
            "Expert answer: {{expected}}\nSubmission: {{output}}\nChoose: (A) a subset of the expert "
            "answer (B) a superset (C) the same (D) they disagree (E) they differ only in wording"
        ),
        choice_scores={"A": 0.4, "B": 0.8, "C": 1.0, "D": 0.0, "E": 1.0},  # the factuality choices
        model=model,
        use_cot=True,
        temperature=0,
        max_tokens=512,
        client=client,
    )


async def _classify_once(settings: JudgeSettings) -> None:
    client, _ = judge_client(settings, max_retries=2)
    async with client:
        await preflight_classifier(settings.model, client).eval_async(
            output=PREFLIGHT_ANSWER, expected=PREFLIGHT_ANSWER
        )


def forced_request(settings: JudgeSettings) -> dict[str, Any]:
    """A request whose prompt asks for one tool while `tool_choice` forces the other."""
    return {
        "model": settings.model,
        "messages": [
            {
                "role": "user",
                "content": f"Do not classify anything. Call the tool {UNFORCED_TOOL} now, with no arguments.",
            }
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": FORCED_TOOL,
                    "description": "Record the classification.",
                    "parameters": {
                        "type": "object",
                        "properties": {"choice": {"type": "string", "enum": ["A", "B"]}},
                        "required": ["choice"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": UNFORCED_TOOL,
                    "description": "Skip the classification.",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ],
        "tool_choice": {"type": "function", "function": {"name": FORCED_TOOL}},
        "temperature": 0,
        "max_tokens": 128,
    }


def forced_choice_problem(message: Any, mode: str = DEFAULT_MODE) -> str | None:
    """What a reply to `forced_request` shows the route did with the forced choice, or None when it obeyed."""
    calls = list(getattr(message, "tool_calls", None) or [])
    names = [str(call.function.name) for call in calls]
    if names == [FORCED_TOOL]:
        return None
    if not names:
        text = str(getattr(message, "content", "") or "")[:120]
        got = f"no tool call (text {json.dumps(text)})"
    else:
        got = f"call(s) to {', '.join(names)}"
    if mode != DEFAULT_MODE:
        return (
            f"it ignores a forced call asked as {TOOL_CHOICE_VARIABLE}={mode}: forced {FORCED_TOOL}, the prompt asked "
            f"for {UNFORCED_TOOL}, and it answered with {got}"
        )
    return (
        f"it ignores a forced tool_choice: forced {FORCED_TOOL}, the prompt asked for {UNFORCED_TOOL}, and it answered "
        f"with {got}; autoevals' classifier needs forced tool choice (llama-server, for one, takes tool_choice only as "
        f"a string and turns a forced function into auto: set {TOOL_CHOICE_VARIABLE}=json_schema to ask it for the "
        "call's arguments as structured output)"
    )


async def forced_choice_check(settings: JudgeSettings) -> str | None:
    """Ask the route for a call the model would not make unforced; what it did wrong, or None."""
    client, _ = judge_client(settings, max_retries=2)
    async with client:
        response = await client.chat.completions.create(**forced_request(settings))
    return forced_choice_problem(response.choices[0].message, settings.tool_choice)


def _model_endpoints(env: Mapping[str, str]) -> dict[str, str]:
    """`host:port` -> model under test, for every model EVAL_MODEL names that is reached at a set base URL."""
    found: dict[str, str] = {}
    for model in filter(None, (part.strip() for part in env.get("EVAL_MODEL", "").split(","))):
        prefix = model.partition(":")[0]
        key = endpoint_key(env.get(f"{prefix.upper()}_BASE_URL", "").strip())
        if key is not None:
            found.setdefault(key, model)
    return found


def shared_endpoint(settings: JudgeSettings, env: Mapping[str, str]) -> str | None:
    """The model under test the judge would share its endpoint with, or None."""
    key = endpoint_key(settings.base_url)
    return _model_endpoints(env).get(key) if key is not None else None


def _allowed(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "allow")


def _hint(settings: JudgeSettings) -> str:
    """What the model rules know about why this judge model cannot take autoevals' request."""
    rules = settings.rules
    refuses = [
        what for what, ok in (("forced tool use", rules.forced_tool_use), ("temperature 0", rules.sampling)) if not ok
    ]
    if not refuses:
        return ""
    usable = DEFAULT_JUDGE_MODELS[settings.provider]
    refused = " and ".join(refuses)
    return f" ({settings.model} refuses {refused}; set EVAL_JUDGE_MODEL to one that takes both, e.g. {usable})"


# Why a mode's classification can come back without a call (measured on llama-server, docs/local-models.md).
MODE_HINTS = {
    DEFAULT_MODE: (
        " (a server that reads tool_choice only as a string, as llama-server does, answers autoevals' forced "
        f"function as auto; {TOOL_CHOICE_VARIABLE}=json_schema asks it for the call's arguments as structured output)"
    ),
    "required": (
        f' (with tool_choice "required" llama-server still lets the model write text before its first call, and '
        f"a model that never opens one answers in prose; {TOOL_CHOICE_VARIABLE}=json_schema holds it to the call's "
        "arguments from the first token)"
    ),
}

_PASSED: set[tuple[str, str, str, str]] = set()


def preflight(env: Mapping[str, str] | None = None) -> None:
    """One tiny classification on the configured judge route (once per process and route).

    Raises JudgePreflightError naming the route, the model and the server's message when the route
    refuses it (a model that refuses forced tools or temperature 0, a gateway with no Anthropic key,
    a wrong URL), so the run stops before the first trial. No judge configured: nothing to check.
    """
    source = process_env() if env is None else env
    settings = judge_settings(source)
    if settings is None:
        return
    where = settings.describe()
    route = f"judge route {settings.provider} ({where['judge_base_url']}) with model {settings.model}"
    try:
        mode = parse_mode(settings.tool_choice)
    except ToolChoiceModeError as error:
        raise JudgePreflightError(f"{route}: {error}") from None
    if mode != DEFAULT_MODE:
        route += f" ({TOOL_CHOICE_VARIABLE}={mode})"
    shared = shared_endpoint(settings, source)
    if shared is not None:
        if not _allowed(source.get(SHARED_ENDPOINT_VARIABLE, "")):
            raise JudgePreflightError(
                f"{route} is the endpoint of the model under test {shared}: a server that answers to any model "
                f"name would judge its own answers; point the judge elsewhere (EVAL_JUDGE_PROVIDER, "
                f"EVAL_JUDGE_MODEL) or set {SHARED_ENDPOINT_VARIABLE}=1 to judge with it anyway"
            )
        print(
            f"judge: WARNING: {route} shares its endpoint with the model under test {shared} "
            f"({SHARED_ENDPOINT_VARIABLE}=1)",
            file=sys.stderr,
            flush=True,
        )
    key = (settings.provider, settings.base_url, settings.model, mode)
    if key in _PASSED:
        return
    import openai

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:  # safe inside a running event loop
        try:
            pool.submit(asyncio.run, _classify_once(settings)).result()
            ignored = pool.submit(asyncio.run, forced_choice_check(settings)).result()
        except openai.APIStatusError as error:
            message = _scrub(_server_message(error), settings)
            raise JudgePreflightError(
                f"{route} refused the preflight: HTTP {error.status_code}: {message}{_hint(settings)}"
            ) from None
        except (openai.OpenAIError, ValueError, KeyError, IndexError, TypeError) as error:
            detail = _scrub(str(error), settings)
            raise JudgePreflightError(
                f"{route} failed the preflight: {type(error).__name__}: {detail}{MODE_HINTS.get(mode, '')}"
            ) from None
    if ignored:
        raise JudgePreflightError(f"{route} failed the preflight: {_scrub(ignored, settings)}")
    _PASSED.add(key)


# What the judge spent per trial, for the experiment totals the reporter prints (scorers run in the
# same process as the reporter; a trial is known by case, trial index and start time).
_SPENT: dict[tuple[str, int, str], dict[str, Any]] = {}


def record_judge_usage(record: TrialRecord, spent: Mapping[str, Any]) -> None:
    """Remember what judging `record` cost (`JudgeMeter.metadata()`), for the experiment totals."""
    if spent:
        _SPENT[(record.case_id, record.trial_index, record.started_at)] = dict(spent)


def judge_totals(trials: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The judge's tokens and cost summed over these trials (as dumped records); cost None if unknown."""
    spent = [
        found
        for trial in trials
        if (
            found := _SPENT.get(
                (str(trial.get("case_id")), int(trial.get("trial_index") or 0), str(trial.get("started_at")))
            )
        )
    ]
    costs = [entry["judge_cost_usd"] for entry in spent if entry["judge_cost_usd"] is not None]
    return {
        "judge_calls": sum(entry["judge_calls"] for entry in spent),
        "judge_input_tokens": sum(entry["judge_input_tokens"] for entry in spent),
        "judge_output_tokens": sum(entry["judge_output_tokens"] for entry in spent),
        "judge_cost_usd": round(sum(costs), 6) if costs else None,
    }
