"""Which package and version `EVAL_SERVER=dbhub` runs: read from the committed package.json.

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
SERVER_PACKAGE = "@bytebase/dbhub"
NAMED_SERVER = "dbhub"  # the EVAL_SERVER value that runs it
# DBHub's own configuration, one file per mode (1.4.0 has no read-only flag: `--readonly` and
# READONLY stop it with a pointer to `[[tools]] readonly = true`). Neither holds a secret: the DSN
# is `${DBHUB_TRIAL_DSN}`, which DBHub fills in from its environment when it loads the file.
READ_WRITE_CONFIG = SEAM / "readwrite.toml"
READ_ONLY_CONFIG = SEAM / "readonly.toml"
DSN_VARIABLE = "DBHUB_TRIAL_DSN"


@cache
def pinned_version() -> str:
    """The exact version package.json pins (a range there would make runs incomparable)."""
    spec = str(json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["dependencies"][SERVER_PACKAGE])
    if not spec[:1].isdigit():
        raise ValueError(f"{PACKAGE_JSON}: {SERVER_PACKAGE} must be pinned to an exact version, not {spec!r}")
    return spec


def pinned_label() -> str:
    """`@bytebase/dbhub@1.4.0`: how experiments and comparison keys name this server."""
    return f"{SERVER_PACKAGE}@{pinned_version()}"
