"""What each model accepts and costs, in one table, so a model change is one edit here.

Why a table: Claude models differ in ways that turn a whole run into errors when ignored. From
Anthropic's model pages and "What's new in Claude Sonnet 5.5" (checked 2026-11-30):
- Sonnet 5 and later, Haiku 5.5 and Opus 4.7 and later answer a 400 to `temperature`, `top_p` or
  `top_k` set to anything but the default; the 4.5/4.6 generation and Haiku 4.5 still take them.
- 5.x models think adaptively by default; manual `thinking: {type: enabled, budget_tokens}` is a
  400. Signed `thinking` blocks must go back unchanged (Sonnet 5.5 ties them to the model and the
  conversation); on Sonnet 5.5 the text between tool calls comes back inside thinking blocks.
- Sonnet 5.5 refuses forced tool use (`tool_choice` any/tool); so do models whose thinking is
  always on (Opus 5.5), as thinking has never been allowed with a forced tool choice.
- Prices are US dollars per million tokens: input, output, 5-minute cache write, cache read.
  Sonnet 5.5 cache reads were cut to $0.10 on 2026-10-07; Haiku 5.5's prices are its prompts-up-
  to-100k tier (longer prompts cost 5x, which this table does not model).
A model that is not listed has unknown rules: nothing is refused up front and its cost is None.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Literal

from harness.recording.records import Usage

Thinking = Literal["adaptive", "manual", "none"]


@dataclass(frozen=True)
class Price:
    """Per-million-token prices; cache writes at the 5-minute rate (the default `cache_control`)."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None


@dataclass(frozen=True)
class ModelRules:
    """What one model accepts; the provider builds every request from it."""

    model: str  # "provider:name"
    price: Price | None = None
    sampling: bool = True  # accepts a non-default temperature / top_p / top_k
    thinking: Thinking = "none"  # adaptive: on by default, budget_tokens is a 400; manual: opt-in budget
    forced_tool_use: bool = True  # accepts tool_choice {"type": "any"} / {"type": "tool"}
    text_in_thinking: bool = False  # text between tool calls comes back inside thinking blocks
    max_output_tokens: int | None = None
    context_window: int | None = None
    status: Literal["current", "legacy", "deprecated", "scripted"] = "current"
    # Anthropic's announced retirement date, as Anthropic writes it ("November 30th, 2026"). Kept here,
    # not only read from the SDK: an SDK released after the date drops the model from its own list.
    end_of_life: str | None = None

    def refusal(self, temperature: float | None) -> str | None:
        """Why `temperature` cannot be sent to this model, or None when it can."""
        if temperature is not None and not self.sampling:
            return (
                f"EVAL_TEMPERATURE={temperature:g} cannot be used with {self.model}: the model answers 400 to "
                "temperature/top_p/top_k; unset EVAL_TEMPERATURE"
            )
        return None


K = 1000


def _claude5(name: str, price: Price, *, forced_tool_use: bool = True, **rest: object) -> ModelRules:
    """A 5.x Claude model: adaptive thinking, no sampling parameters, 1M context, 128K output."""
    return ModelRules(
        f"anthropic:{name}",
        price,
        sampling=False,
        thinking="adaptive",
        forced_tool_use=forced_tool_use,
        max_output_tokens=128 * K,
        context_window=1000 * K,
        **rest,  # type: ignore[arg-type]
    )


def _claude4(
    name: str,
    price: Price,
    *,
    context_window: int = 200 * K,
    status: Literal["legacy", "deprecated"],
    end_of_life: str | None = None,
) -> ModelRules:
    """A 4.x Claude model: manual thinking budgets, sampling parameters accepted, 64K output."""
    return ModelRules(
        f"anthropic:{name}",
        price,
        thinking="manual",
        max_output_tokens=64 * K,
        context_window=context_window,
        status=status,
        end_of_life=end_of_life,
    )


ANTHROPIC: dict[str, ModelRules] = {
    rules.model: rules
    for rules in (
        _claude5("claude-sonnet-5-5", Price(2.0, 10.0, 2.50, 0.10), forced_tool_use=False, text_in_thinking=True),
        _claude5("claude-haiku-5-5", Price(0.10, 0.50, 0.125, 0.01)),
        _claude5("claude-opus-5-5", Price(4.0, 20.0, 5.00, 0.20), forced_tool_use=False),
        _claude5("claude-sonnet-5", Price(2.0, 10.0, 2.50, 0.20), status="legacy"),
        _claude5("claude-opus-5", Price(5.0, 25.0, 6.25, 0.50), status="legacy"),
        _claude4("claude-sonnet-4-6", Price(3.0, 15.0, 3.75, 0.30), context_window=1000 * K, status="legacy"),
        _claude4("claude-haiku-4-5", Price(1.0, 5.0, 1.25, 0.10), status="legacy"),
        _claude4(
            "claude-sonnet-4-5", Price(3.0, 15.0, 3.75, 0.30), status="deprecated", end_of_life="November 30th, 2026"
        ),
        _claude4(
            "claude-opus-4-5", Price(5.0, 25.0, 6.25, 0.50), status="deprecated", end_of_life="January 22nd, 2027"
        ),
    )
}

OPENAI: dict[str, ModelRules] = {
    "openai:gpt-4o": ModelRules("openai:gpt-4o", Price(2.5, 10.0, None, 1.25)),
    "openai:gpt-4o-mini": ModelRules("openai:gpt-4o-mini", Price(0.15, 0.6, None, 0.075)),
    "openai:gpt-4.1-mini": ModelRules("openai:gpt-4.1-mini", Price(0.40, 1.60, None, 0.10)),
}

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5"
DEFAULT_MODEL = f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
# Adaptive thinking spends output tokens before the answer; leave room for both.
DEFAULT_MAX_TOKENS = 16_000
_DATED = re.compile(r"-\d{8}$")


def anthropic_rules(name: str) -> ModelRules:
    """Rules for a Claude model id (a dated snapshot id shares its alias's rules)."""
    model = f"anthropic:{name}"
    found = ANTHROPIC.get(model) or ANTHROPIC.get(_DATED.sub("", model))
    return found or ModelRules(model)


def openai_rules(name: str) -> ModelRules:
    return OPENAI.get(f"openai:{name}") or ModelRules(f"openai:{name}")


def cost_usd(rules: ModelRules | None, usage: Usage) -> float | None:
    """Dollar cost of `usage` under `rules`, or None when the price is unknown (never guessed)."""
    if rules is None or rules.price is None:
        return None
    price = rules.price
    total = usage.input_tokens * price.input + usage.output_tokens * price.output
    total += usage.cache_read_input_tokens * (price.cache_read if price.cache_read is not None else price.input)
    total += usage.cache_creation_input_tokens * (price.cache_write if price.cache_write is not None else price.input)
    return round(total / 1_000_000, 6)


def answered_as_asked(model: str, answered_by: list[str]) -> bool:
    """Whether every response named the model asked for ("provider:name"), or a dated snapshot of it.

    A local server answers to any model name: a price looked up by the name asked for would be a
    guess about a model that never ran. No names reported: the request's own name stands."""
    name = model.partition(":")[2] or model
    return all(seen in (model, name) or seen.startswith(f"{name}-") for seen in answered_by)


def trial_cost_usd(model: str, rules: ModelRules | None, usage: Usage, answered_by: list[str]) -> float | None:
    """The cost of `usage` when the responses came from the model priced, else None (never a guess)."""
    return cost_usd(rules, usage) if answered_as_asked(model, answered_by) else None


def _parse_sdk_date(text: str) -> date | None:
    """'November 30th, 2026' (the SDK's spelling) as a date; None when it cannot be read."""
    try:
        return datetime.strptime(re.sub(r"(\d)(st|nd|rd|th)", r"\1", text), "%B %d, %Y").date()
    except ValueError:
        return None


@cache
def sdk_deprecated_models() -> dict[str, str]:
    """The installed Anthropic SDK's `DEPRECATED_MODELS` (model id -> end-of-life date as written).

    Read from its data file, not imported: importing anything of the SDK loads all of it (about 2 s),
    and every Settings for a Claude model asks for these dates, a control-agent run included. An SDK
    whose file is missing or shaped otherwise is imported after all; one without the table gives {}."""
    spec = importlib.util.find_spec("anthropic")  # finds the package without running it
    if spec is not None and spec.origin:
        table = _assigned_literal(Path(spec.origin).parent / "_data" / "deprecated_models.py", "DEPRECATED_MODELS")
        if isinstance(table, dict):
            return {str(name): str(text) for name, text in table.items()}
    try:
        from anthropic._data import DEPRECATED_MODELS
    except ImportError:  # an SDK without the table: the rules table's dates alone
        return {}
    return {str(name): str(text) for name, text in DEPRECATED_MODELS.items()}


def _assigned_literal(source: Path, name: str) -> object:
    """The literal value a module file assigns to `name` at its top level (None: no such file or literal)."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    targets: list[ast.expr]
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        if value is not None and any(isinstance(t, ast.Name) and t.id == name for t in targets):
            try:
                return ast.literal_eval(value)
            except ValueError:
                return None
    return None


def end_of_life_dates() -> dict[str, tuple[str, date | None]]:
    """Every Claude model id with an end-of-life date, as written and parsed: the rules table's own
    dates, and whatever else the installed Anthropic SDK lists as deprecated (the table wins: an SDK
    released after a retirement no longer lists the retired model, which must still be refused)."""
    dates = {name: (text, _parse_sdk_date(text)) for name, text in sdk_deprecated_models().items() if text}
    for rules in ANTHROPIC.values():
        if rules.end_of_life:
            dates[rules.model.partition(":")[2]] = (rules.end_of_life, _parse_sdk_date(rules.end_of_life))
    return dates


def end_of_life(name: str) -> str | None:
    """The end-of-life date the installed Anthropic SDK lists for model `name`, if any."""
    found = end_of_life_dates().get(name)
    return found[0] if found else None


def _dates(model: str) -> tuple[str, date | None] | None:
    prefix, _, name = model.partition(":")
    if prefix != "anthropic":
        return None
    dates = end_of_life_dates()
    return dates.get(name) or dates.get(_DATED.sub("", name))  # a dated snapshot retires with its alias


def end_of_life_refusal(model: str, today: date) -> str | None:
    """Why `model` cannot run on `today` (Anthropic no longer serves it), or None while it is served."""
    found = _dates(model)
    if found is None or found[1] is None or today <= found[1]:
        return None
    return f"EVAL_MODEL: {model} reached end of life on {found[0]}: Anthropic no longer serves it; use {DEFAULT_MODEL}"


def deprecation_warning(model: str, today: date) -> str | None:
    """A loud line for a Claude model the SDK lists as deprecated ("provider:name") still served on `today`."""
    found = _dates(model)
    if found is None or end_of_life_refusal(model, today):
        return None
    today_note = " (today)" if found[1] == today else ""
    return f"{model} is deprecated and reaches end of life on {found[0]}{today_note}; move to {DEFAULT_MODEL}"
