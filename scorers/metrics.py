"""Numbers about a trial (cost, tokens, turns, calls, latency) for Braintrust's metrics."""

from __future__ import annotations

from harness.recording.records import TrialRecord


def trial_metrics(record: TrialRecord) -> dict[str, float]:
    """Every value is a number so Braintrust can aggregate it; cost is left out when unknown."""
    metrics: dict[str, float] = {
        "input_tokens": float(record.usage.input_tokens),
        "output_tokens": float(record.usage.output_tokens),
        "cache_read_input_tokens": float(record.usage.cache_read_input_tokens),
        "cache_creation_input_tokens": float(record.usage.cache_creation_input_tokens),
        "thinking_tokens": float(record.usage.thinking_tokens),
        "model_calls": float(record.usage.model_calls),
        "turns": float(record.turns),
        "tool_calls": float(len(record.tool_calls)),
        "tool_errors": float(sum(call.is_error for call in record.tool_calls)),
        "decoy_calls": float(sum(call.decoy for call in record.tool_calls)),
        "unknown_tool_calls": float(sum(call.unknown for call in record.tool_calls)),
        "duration_s": float(record.duration_s),
        "infra_error": 1.0 if record.outcome == "infra_error" else 0.0,
    }
    if record.cost_usd is not None:
        metrics["cost_usd"] = float(record.cost_usd)
    return metrics
