"""The command and environment a stdio server under test gets, and the warning that it is unpinned.

Why its own environment: the MCP SDK hands a stdio server only a handful of variables (HOME, PATH,
USER, ...), so whatever a Neon-like server needs is passed explicitly, and nothing else of the
harness's environment (model keys, Braintrust's key) leaks into it:
- `NEON_API_KEY` and `NEON_API_HOST` (what Neon's servers read) and `NEON_API_URL` (this suite's
  name): the API the harness uses for the trial's sandbox, i.e. `NEON_API_URL` when given, else
  the harness's own localneon (its URL and per-run token);
- `LOCALNEON_PGDATA`, `DATABASE_URL`, `VIRTUAL_ENV`, `PYTHONPATH` when set, so a stdio localneon
  shares the harness's cluster;
- telemetry off for Neon's code: `SENTRY_DSN=` (empty: no Sentry), `ANALYTICS_WRITE_KEY=`,
  `NEXT_TELEMETRY_DISABLED=1`.
`EVAL_SERVER=neon-npm` runs Neon's published server (installed from the lock file) with
`--no-analytics`, the SQL preload, a preload that keeps its key out of its stderr, and an empty
working directory of its own: it loads the `.env` of its working directory, and the suite's `.env`
holds the suite's secrets.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import sys
import tempfile
from functools import cache
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from harness.config import ConfigError, Settings
from harness.servers.neon.published.install import NpmInstallError, ensure_installed, server_entry
from harness.servers.neon.published.pin import NAMED_SERVER, SEAM, pinned_label

PASSED_THROUGH = ("LOCALNEON_PGDATA", "DATABASE_URL", "VIRTUAL_ENV", "PYTHONPATH")
TELEMETRY_OFF = {"SENTRY_DSN": "", "ANALYTICS_WRITE_KEY": "", "NEXT_TELEMETRY_DISABLED": "1"}
SQL_PRELOAD = SEAM / "sql-endpoint.mjs"
KEY_PRELOAD = SEAM / "redact-key.mjs"  # its start-up errors print request headers, the key among them
# What the server's command line carries instead of the key (any user can read a command line); the
# key preload swaps the key in from NEON_API_KEY before the server's code reads its arguments.
KEY_PLACEHOLDER = "key-from-NEON_API_KEY"
# Tools that act on the whole account, which a pinned session would not list (Neon's project-scoped mode).
ACCOUNT_TOOLS = ("list_projects", "list_organizations", "list_shared_projects", "create_project", "delete_project")
_WARNED: set[str] = set()


def server_environment(api_url: str, api_key: str | None) -> dict[str, str]:
    """Every variable a stdio server gets beyond the MCP SDK's defaults (see the module docstring)."""
    # A child's environment: these of ours passed on to the stdio server (the one keyed read outside the settings).
    env = {name: os.environ[name] for name in PASSED_THROUGH if os.environ.get(name)}
    env.update(TELEMETRY_OFF)
    env.update({"NEON_API_HOST": api_url, "NEON_API_URL": api_url})
    if api_key:
        env["NEON_API_KEY"] = api_key
    return env


def stdio_target(settings: Settings, api_url: str, api_key: str | None) -> StdioServerParameters:
    """How to start the configured stdio server against `api_url` (ConfigError when it cannot be)."""
    env = server_environment(api_url, api_key)
    if settings.server == NAMED_SERVER:
        return neon_npm_target(env, api_key)
    parts = shlex.split(settings.server)
    if not parts:
        raise ConfigError("EVAL_SERVER is an empty command")
    return StdioServerParameters(command=parts[0], args=parts[1:], env=env)


def neon_npm_target(env: dict[str, str], api_key: str | None) -> StdioServerParameters:
    """`node --import redact-key.mjs --import sql-endpoint.mjs .../dist/index.js start <placeholder> --no-analytics`,
    from an empty folder. 0.6.5 takes its key only as an argument (it has no variable for it), and
    prints it with any start-up error: the first preload swaps the key in from the environment, so it
    is never on the command line, and keeps it out of stderr."""
    try:
        folder = ensure_installed()
    except NpmInstallError as error:
        raise ConfigError(f"EVAL_SERVER={NAMED_SERVER}: {error}") from None
    if not api_key:
        raise ConfigError(f"EVAL_SERVER={NAMED_SERVER} with NEON_API_URL needs NEON_API_KEY, which is not set")
    preloads = ["--import", KEY_PRELOAD.as_uri(), "--import", SQL_PRELOAD.as_uri()]
    args = [*preloads, str(server_entry(folder)), "start", KEY_PLACEHOLDER, "--no-analytics"]
    return StdioServerParameters(command="node", args=args, env=env, cwd=empty_workdir())


@cache
def empty_workdir() -> Path:
    """One empty folder per process for the server's working directory (it loads a `.env` from there)."""
    folder = Path(tempfile.mkdtemp(prefix="neon-npm-cwd-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def install_before_start(settings: Settings) -> None:
    """Install Neon's published server now (at start, before any trial) when the run uses it."""
    if settings.server != NAMED_SERVER:
        return
    log: list[str] = []
    try:
        ensure_installed(log=log)
    except NpmInstallError as error:
        raise ConfigError(f"EVAL_SERVER={NAMED_SERVER}: {error}") from None
    for line in log:
        print(f"harness: {line}", file=sys.stderr, flush=True)


def warn_unpinned(settings: Settings) -> None:
    """Say loudly, once per process, that a stdio server shows the model the whole account."""
    name = settings.server_identity
    if name in _WARNED:
        return
    _WARNED.add(name)
    label = pinned_label() if settings.server == NAMED_SERVER else name
    print(
        f"harness: WARNING: the stdio server {label} cannot be pinned to the trial's project (a stdio "
        "command has no URL grant): the model sees all of its tools, for Neon's servers the account tools "
        f"{', '.join(ACCOUNT_TOOLS)} included, and every project its API key reaches. Trials still run "
        "in their own project; what the model does elsewhere is not undone.",
        file=sys.stderr,
        flush=True,
    )
