"""Every environment variable localneon reads, with its default: the one module that touches ``os.environ``.

Each reader looks the variable up when it is called, so a process that sets one before it opens the
cluster (a test, the harness's launcher) is heard. The bounds on a model's SQL are read once, when
``localneon.engine.bounds`` is imported, as they always were; a server started with other bounds is a
new process.

| variable                           | default                       | read by                               |
|------------------------------------|-------------------------------|---------------------------------------|
| ``LOCALNEON_PGDATA``               | ``<repo>/.localneon/pgdata``  | the embedded cluster                  |
| ``DATABASE_URL``                   | none: start the embedded one  | the cluster (an existing server)      |
| ``LOCALNEON_KEEP``                 | off (``1`` keeps it running)  | releasing the cluster                 |
| ``LOCALNEON_STATEMENT_TIMEOUT``    | 60 s                          | the SQL bounds                        |
| ``LOCALNEON_MAX_RESULT_BYTES``     | 1 000 000                     | the SQL bounds                        |
| ``LOCALNEON_MAX_SQL_BODY_BYTES``   | 10 000 000                    | the SQL bounds (``POST /sql``)        |
| ``LOCALNEON_TEMP_FILE_LIMIT_MB``   | 256                           | the SQL bounds (on each project role) |
| ``LOCALNEON_BRANCH_SIZE_LIMIT_MB`` | 512                           | the SQL bounds (the watchdog)         |
| ``LOCALNEON_BACKEND_MEMORY_MB``    | 1024                          | the embedded cluster, as it starts    |
| ``LOCALNEON_TOKEN``                | none: no bearer auth          | the HTTP server                       |
| ``LOCALNEON_DESCRIPTIONS``         | none: the default texts       | the MCP tool descriptions             |
| ``LOCALNEON_SURFACE``              | none: localneon's own surface | the MCP server                        |

``python -m localneon.snapshot`` also reads the variable its ``--token-env`` names (``NEON_API_KEY``
by default) and ``NEON_API_HOST``, and hands a stdio server it starts this process's environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PGDATA = REPO_ROOT / ".localneon" / "pgdata"
DEFAULT_STATEMENT_TIMEOUT_S = 60.0
DEFAULT_MAX_RESULT_BYTES = 1_000_000
DEFAULT_MAX_SQL_BODY_BYTES = 10_000_000
DEFAULT_TEMP_FILE_LIMIT_MB = 256
DEFAULT_BRANCH_SIZE_LIMIT_MB = 512
DEFAULT_BACKEND_MEMORY_MB = 1024


def _text(name: str) -> str | None:
    """The variable's value; unset and empty are both None."""
    return os.environ.get(name) or None


# The cluster
def pgdata() -> Path:
    """The embedded data directory: ``LOCALNEON_PGDATA`` or ``<repo>/.localneon/pgdata``."""
    return Path(_text("LOCALNEON_PGDATA") or DEFAULT_PGDATA).expanduser().resolve()


def database_url() -> str | None:
    """``DATABASE_URL``: an existing PostgreSQL superuser connection to use instead of the embedded one."""
    return _text("DATABASE_URL")


def keep_cluster() -> bool:
    """``LOCALNEON_KEEP=1``: releasing the last lease leaves the embedded server running."""
    return os.environ.get("LOCALNEON_KEEP") == "1"


@contextmanager
def runtime_dir(default: Path) -> Iterator[None]:
    """``XDG_RUNTIME_DIR`` is ``default`` inside the block unless the user set one (the embedded
    package reads it as it loads); afterwards it is unset again."""
    override = "XDG_RUNTIME_DIR" not in os.environ
    if override:
        os.environ["XDG_RUNTIME_DIR"] = str(default)
    try:
        yield
    finally:
        if override:
            os.environ.pop("XDG_RUNTIME_DIR", None)


def runtime_dir_is_set() -> bool:
    return "XDG_RUNTIME_DIR" in os.environ


# The bounds on a model's SQL
def _number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return float(raw) if raw else default


def statement_timeout_s() -> float:
    """``LOCALNEON_STATEMENT_TIMEOUT``: seconds one SQL call may run."""
    return _number("LOCALNEON_STATEMENT_TIMEOUT", DEFAULT_STATEMENT_TIMEOUT_S)


def _integer(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


def max_result_bytes() -> int:
    """``LOCALNEON_MAX_RESULT_BYTES``: the most of a result a tool returns or ``/sql`` sends."""
    return _integer("LOCALNEON_MAX_RESULT_BYTES", DEFAULT_MAX_RESULT_BYTES)


def max_sql_body_bytes() -> int:
    """``LOCALNEON_MAX_SQL_BODY_BYTES``: the largest ``POST /sql`` body."""
    return _integer("LOCALNEON_MAX_SQL_BODY_BYTES", DEFAULT_MAX_SQL_BODY_BYTES)


def temp_file_limit_mb() -> int:
    """``LOCALNEON_TEMP_FILE_LIMIT_MB``: the temporary files one session of a project's role may hold
    (PostgreSQL's ``temp_file_limit``, set on the role by the superuser)."""
    return _integer("LOCALNEON_TEMP_FILE_LIMIT_MB", DEFAULT_TEMP_FILE_LIMIT_MB)


def branch_size_limit_mb() -> int:
    """``LOCALNEON_BRANCH_SIZE_LIMIT_MB``: the size past which a branch database may not grow during
    a SQL call (Neon's project size limit; 0 turns it off)."""
    return _integer("LOCALNEON_BRANCH_SIZE_LIMIT_MB", DEFAULT_BRANCH_SIZE_LIMIT_MB)


def backend_memory_mb() -> int:
    """``LOCALNEON_BACKEND_MEMORY_MB``: the address space each process of the embedded cluster may
    map, its shared memory included (read when the cluster starts; 0 turns the cap off)."""
    return _integer("LOCALNEON_BACKEND_MEMORY_MB", DEFAULT_BACKEND_MEMORY_MB)


# The server
def token() -> str | None:
    """``LOCALNEON_TOKEN``: the bearer token ``/mcp`` and ``/api/v2`` require (``--token`` wins)."""
    return _text("LOCALNEON_TOKEN")


def descriptions_file() -> str | None:
    """``LOCALNEON_DESCRIPTIONS``: a YAML file overriding tool descriptions (``--descriptions`` wins)."""
    return _text("LOCALNEON_DESCRIPTIONS")


def surface_file() -> str | None:
    """``LOCALNEON_SURFACE``: a snapshot file whose words the tools wear (``--surface`` wins)."""
    return _text("LOCALNEON_SURFACE")


# python -m localneon.snapshot
def variable(name: str) -> str | None:
    """The variable ``name`` (the one ``--token-env`` names); unset and empty are both None."""
    return _text(name)


def neon_api_host_set() -> bool:
    """Whether ``NEON_API_HOST`` points Neon's published server at an API (the local twin's)."""
    return "NEON_API_HOST" in os.environ


def environment() -> dict[str, str]:
    """A copy of this process's environment, for a server process it starts."""
    return dict(os.environ)
