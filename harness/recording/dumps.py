"""Schema dumps made comparable: strip what differs between two dumps of the same schema.

pg_dump 18 (and 17.6, 16.10, ... since August 2025) brackets every plain dump with
`\\restrict <random key>` / `\\unrestrict <random key>`, so raw string equality always fails.
Version comments and the SET preamble depend on the client and server, not on the schema. The
scorers compare dumps with this, and so does the pool's check that a project still holds its fixture.
"""

from __future__ import annotations

import re

_DROPPED = (
    re.compile(r"^\\(un)?restrict\s+\S+\s*$"),
    re.compile(r"^-- Dumped (from database version|by pg_dump version) .*$"),
    re.compile(r"^SET\s+\w+\s*=.*;\s*$"),
    re.compile(r"^SELECT pg_catalog\.set_config\(.*\);\s*$"),
)


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
