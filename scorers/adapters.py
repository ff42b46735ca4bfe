"""Braintrust-shaped scorers: keyword arguments `input, output, expected, metadata` in, Score out.

The task stores `metadata["trial"] = TrialRecord.model_dump(mode="json")` and
`metadata["case"] = Case.model_dump(mode="json")`; each adapter rebuilds both and calls the pure
scorer of the same name, so `__name__` (Braintrust's span name) equals the score name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from autoevals import Score
from pydantic import ValidationError

from harness.cases import Case
from harness.records import TrialRecord
from scorers import cleanup as cleanup_module
from scorers import data_integrity as data_module
from scorers import factuality as factuality_module
from scorers import integrity as integrity_module
from scorers import trajectory as trajectory_module
from scorers._common import skipped

PureScorer = Callable[[TrialRecord, Case], Score]


def rebuild(metadata: Mapping[str, Any] | None) -> tuple[TrialRecord, Case] | str:
    """The trial and case carried in Braintrust metadata, or why they cannot be rebuilt."""
    if not metadata or "trial" not in metadata or "case" not in metadata:
        return "metadata lacks 'trial' and 'case' (the task must store both)"
    try:
        return TrialRecord.model_validate(metadata["trial"]), Case.model_validate(metadata["case"])
    except ValidationError as error:
        return f"cannot rebuild trial/case from metadata: {error.error_count()} errors: {error.errors()[0]['msg']}"


def _run(name: str, scorer: PureScorer, metadata: Mapping[str, Any] | None) -> Score:
    rebuilt = rebuild(metadata)
    if isinstance(rebuilt, str):
        return skipped(name, rebuilt)
    return scorer(*rebuilt)


def _adapter(name: str, scorer: PureScorer) -> Callable[..., Score]:
    """A Braintrust scorer named `name` that rebuilds the trial and case and calls `scorer`."""

    def adapter(
        input: Any = None, output: Any = None, expected: Any = None, metadata: Mapping[str, Any] | None = None, **_: Any
    ) -> Score:
        return _run(name, scorer, metadata)

    adapter.__name__ = adapter.__qualname__ = name
    return adapter


main_branch_integrity = _adapter(integrity_module.NAME, integrity_module.main_branch_integrity)
data_integrity = _adapter(data_module.NAME, data_module.data_integrity)
tool_trajectory = _adapter(trajectory_module.NAME, trajectory_module.tool_trajectory)
temporary_branch_cleanup = _adapter(cleanup_module.NAME, cleanup_module.temporary_branch_cleanup)


async def factuality(
    input: Any = None, output: Any = None, expected: Any = None, metadata: Mapping[str, Any] | None = None, **_: Any
) -> Score:
    rebuilt = rebuild(metadata)
    if isinstance(rebuilt, str):
        return skipped(factuality_module.NAME, rebuilt)
    return await factuality_module.factuality(*rebuilt)


SCORERS: list[Callable[..., Score | Awaitable[Score]]] = [
    main_branch_integrity,
    data_integrity,
    tool_trajectory,
    temporary_branch_cleanup,
    factuality,
]
