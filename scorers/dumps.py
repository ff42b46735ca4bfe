"""Diffs of schema dumps, made comparable first (`harness.recording.dumps.normalise_dump` says how)."""

from __future__ import annotations

import difflib

DIFF_LINE_CAP = 120


def capped_diff(expected: str, actual: str, expected_label: str, actual_label: str) -> tuple[str, int]:
    """A unified diff of normalised dumps, cut at DIFF_LINE_CAP lines; also the full line count."""
    lines = list(
        difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), fromfile=expected_label, tofile=actual_label, lineterm=""
        )
    )
    shown = lines[:DIFF_LINE_CAP]
    if len(lines) > DIFF_LINE_CAP:
        shown.append(f"... {len(lines) - DIFF_LINE_CAP} more diff lines")
    return "\n".join(shown), len(lines)
