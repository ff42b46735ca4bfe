"""Braintrust-shaped scorers: keyword arguments `input, output, expected, metadata` in, Score out.

The task registers the trial record and its case in `harness.recording.trial_registry` and puts the key in
`metadata["trial_key"]` (the metadata is uploaded, the record is not); each adapter finds both
there and calls the pure scorer of the same name, so `__name__` (Braintrust's span name) equals
the score name. Metadata holding a full `trial` and `case` (a past run being re-scored) works too.
Every score an adapter returns names the scorer's version in its metadata (`scorer_version`), also
the n/a given when the trial cannot be found: it says which scorer was wired in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from autoevals import Score
from pydantic import ValidationError

from harness.cases import Case
from harness.recording import trial_registry
from harness.recording.records import TrialRecord
from scorers import registry
from scorers._common import skipped
from scorers.spec import ScorerSpec
from scorers.versions import stamp


def rebuild(metadata: Mapping[str, Any] | None) -> tuple[TrialRecord, Case] | str:
    """The trial and case named (or carried) by Braintrust metadata, or why they cannot be found."""
    key = (metadata or {}).get("trial_key")
    if isinstance(key, str):
        found = trial_registry.lookup(key)
        if found is not None:
            return found
    if not metadata or "trial" not in metadata or "case" not in metadata:
        if isinstance(key, str):
            return f"trial {key} is not held by this process (and metadata lacks 'trial' and 'case')"
        return "metadata lacks 'trial_key' (or a full 'trial' and 'case'): the task must store one"
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
        return stamp(skipped(spec.name, rebuilt), spec.version()) if isinstance(rebuilt, str) else spec.score(*rebuilt)

    async def async_adapter(
        input: Any = None, output: Any = None, expected: Any = None, metadata: Mapping[str, Any] | None = None, **_: Any
    ) -> Score:
        rebuilt = rebuild(metadata)
        if isinstance(rebuilt, str):
            return stamp(skipped(spec.name, rebuilt), spec.version())
        return await spec.ascore(*rebuilt)  # the case in the terms of the family that ran it

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
