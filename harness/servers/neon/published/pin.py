"""Which package and version `EVAL_SERVER=neon-npm` runs: read from the committed package.json.

A leaf module (imports nothing of the harness), so settings can name the server stably (its
package and version) without touching npm.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

SEAM = Path(__file__).resolve().parent
PACKAGE_JSON = SEAM / "package.json"
LOCK_FILE = SEAM / "package-lock.json"
SERVER_PACKAGE = "@neondatabase/mcp-server-neon"
NAMED_SERVER = "neon-npm"  # the EVAL_SERVER value that runs it


@cache
def pinned_version() -> str:
    """The exact version package.json pins (a range there would make runs incomparable)."""
    spec = str(json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["dependencies"][SERVER_PACKAGE])
    if not spec[:1].isdigit():
        raise ValueError(f"{PACKAGE_JSON}: {SERVER_PACKAGE} must be pinned to an exact version, not {spec!r}")
    return spec


def pinned_label() -> str:
    """`@neondatabase/mcp-server-neon@0.6.5`: how experiments and comparison keys name this server."""
    return f"{SERVER_PACKAGE}@{pinned_version()}"
