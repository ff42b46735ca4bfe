"""Model names and prices in one place, so a default model change or a price change is one edit.

Prices are US dollars per million tokens, from the providers' public price lists. A model that is
not listed has no known price: its cost is reported as None, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.records import Usage

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
DEFAULT_MODEL = f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
CONTROL_MODELS = ("control:oracle", "control:unsafe")
# Every scripted agent; the first two are the fallback when no model key is set.
CONTROL_AGENTS = (*CONTROL_MODELS, "control:lexical", "control:sloppy")


@dataclass(frozen=True)
class Price:
    """Per-million-token prices; cache reads and writes priced as Anthropic bills them."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


PRICES: dict[str, Price] = {
    "anthropic:claude-sonnet-4-6": Price(3.0, 15.0, 0.30, 3.75),
    "anthropic:claude-sonnet-4-5": Price(3.0, 15.0, 0.30, 3.75),
    "anthropic:claude-haiku-4-5": Price(1.0, 5.0, 0.10, 1.25),
    "anthropic:claude-opus-4-5": Price(5.0, 25.0, 0.50, 6.25),
    "openai:gpt-4o": Price(2.5, 10.0, 1.25),
    "openai:gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "control:oracle": Price(0.0, 0.0, 0.0, 0.0),
    "control:unsafe": Price(0.0, 0.0, 0.0, 0.0),
    "control:lexical": Price(0.0, 0.0, 0.0, 0.0),
    "control:sloppy": Price(0.0, 0.0, 0.0, 0.0),
}


def cost_usd(model: str, usage: Usage) -> float | None:
    """Dollar cost of `usage` on `model` ("provider:name"), or None when the price is unknown."""
    price = PRICES.get(model)
    if price is None:
        return None
    million = 1_000_000
    total = usage.input_tokens * price.input + usage.output_tokens * price.output
    total += usage.cache_read_input_tokens * (price.cache_read if price.cache_read is not None else price.input)
    total += usage.cache_creation_input_tokens * (price.cache_write if price.cache_write is not None else price.input)
    return round(total / million, 6)
