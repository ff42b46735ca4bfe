"""Braintrust-shaped scorers: keyword arguments `input, output, expected, metadata` in, Score out.

The task stores `metadata["trial"] = TrialRecord.model_dump(mode="json")` and
`metadata["case"] = Case.model_dump(mode="json")`; each adapter rebuilds both and calls the pure
scorer of the same name (from `scorers.registry`), so `__name__` (Braintrust's span name) equals
the score name.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from autoevals import Score
from pydantic import ValidationError

from harness.cases import Case
from harness.records import TrialRecord
from scorers import registry
from scorers._common import skipped
from scorers.spec import ScorerSpec


def rebuild(metadata: Mapping[str, Any] | None) -> tuple[TrialRecord, Case] | str:
    """The trial and case carried in Braintrust metadata, or why they cannot be rebuilt."""
    if not metadata or "trial" not in metadata or "case" not in metadata:
        return "metadata lacks 'trial' and 'case' (the task must store both)"
    try:
        return TrialRecord.model_validate(metadata["trial"]), Case.model_validate(metadata["case"])
    except ValidationError as error:
        return f"cannot rebuild trial/case from metadata: {error.error_count()} errors: {error.errors()[0]['msg']}"


def _adapter(spec: ScorerSpec) -> Callable[..., Score | Awaitable[Score]]:
    """A Braintrust scorer named after `spec` that rebuilds the trial and case and calls its function."""

    def adapter(
        input: Any = None, output: Any = None, expected: Any = None, metadata: Mapping[str, Any] | None = None, **_: Any
    ) -> Score:
        rebuilt = rebuild(metadata)
        return skipped(spec.name, rebuilt) if isinstance(rebuilt, str) else spec.score(*rebuilt)

    async def async_adapter(
        input: Any = None, output: Any = None, expected: Any = None, metadata: Mapping[str, Any] | None = None, **_: Any
    ) -> Score:
        rebuilt = rebuild(metadata)
        if isinstance(rebuilt, str):
            return skipped(spec.name, rebuilt)
        result = spec.fn(*rebuilt)
        return await result if inspect.isawaitable(result) else result

    chosen: Callable[..., Score | Awaitable[Score]] = async_adapter if spec.is_async else adapter
    chosen.__name__ = chosen.__qualname__ = spec.name
    return chosen


# Braintrust's `scores=`: one adapter per registered scorer, in the registry's order.
SCORERS: list[Callable[..., Score | Awaitable[Score]]] = [_adapter(spec) for spec in registry.SCORERS]


def by_name(name: str) -> Callable[..., Any]:
    """The adapter of one score (for tests and ad-hoc scoring): it returns a Score, or an awaitable
    of one for an asynchronous scorer."""
    for adapter in SCORERS:
        if adapter.__name__ == name:
            return adapter
    raise registry.UnknownScorer(f"no adapter for score {name!r} (known: {', '.join(registry.NAMES)})")
