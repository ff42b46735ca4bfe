"""Schema dumps made comparable: strip what differs between two dumps of the same schema.

pg_dump 18 (and 17.6, 16.10, ... since August 2025) brackets every plain dump with
`\\restrict <random key>` / `\\unrestrict <random key>`, so raw string equality always fails.
Version comments and the SET preamble depend on the client and server, not on the schema.
"""

from __future__ import annotations

import difflib
import re

_DROPPED = (
    re.compile(r"^\\(un)?restrict\s+\S+\s*$"),
    re.compile(r"^-- Dumped (from database version|by pg_dump version) .*$"),
    re.compile(r"^SET\s+\w+\s*=.*;\s*$"),
    re.compile(r"^SELECT pg_catalog\.set_config\(.*\);\s*$"),
)
DIFF_LINE_CAP = 120


def normalise_dump(text: str) -> str:
    """The dump with volatile lines and blank lines removed and trailing spaces trimmed.

    Blank lines go entirely (not just runs of them): removing a SET line otherwise leaves the
    blank-line layout differing between dumps whose schema is the same.
    """
    kept: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if any(pattern.match(line) for pattern in _DROPPED):
            continue
        if line:
            kept.append(line)
    return "\n".join(kept) + "\n"


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
