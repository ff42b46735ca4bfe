"""Small helpers every scorer shares: skipped scores and tool-argument unwrapping."""

from __future__ import annotations

from typing import Any

from autoevals import Score

from harness.records import Snapshot, ToolCall, TrialRecord


def skipped(name: str, reason: str, **extra: Any) -> Score:
    """A score of None with the reason: Braintrust logs it and leaves it out of the average."""
    return Score(name=name, score=None, metadata={"reason": reason, **extra})


def infra_skip(name: str, record: TrialRecord) -> Score | None:
    """Trials that failed for infrastructure reasons say nothing about the model: skip them."""
    if record.outcome == "infra_error":
        return skipped(name, f"infra_error: {record.error or 'unknown'}", outcome=record.outcome)
    return None


def arguments_of(call: ToolCall) -> dict[str, Any]:
    """The call's arguments, flat: HEAD of Neon's server wraps them as {"params": {...}}."""
    args = call.arguments
    if set(args) == {"params"} and isinstance(args["params"], dict):
        return args["params"]
    return args


def snapshot_problem(label: str, snapshot: Snapshot | None) -> str | None:
    """Why a snapshot cannot be used, or None when it can."""
    if snapshot is None:
        return f"no {label} snapshot"
    if snapshot.error:
        return f"{label} snapshot failed: {snapshot.error}"
    return None
