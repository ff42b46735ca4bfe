"""The command that starts DBHub over stdio for one trial, on that trial's database.

What DBHub 1.4.0 reads (its `dist/chunk-*.js`, `parseCommandLineArgs` and `resolveSourceConfigs`):
`--transport=stdio` (also its default), and either `--dsn=<postgres://...>` or `--config=<toml>`,
never both. Read-only mode exists only in the TOML (`[[tools]] readonly = true`; `--readonly` stops
it with a pointer there), so every trial gets `--config` with one of the two committed files of
`published/`, and its DSN in the environment: the files say `dsn = "${DBHUB_TRIAL_DSN}"`, which
DBHub fills in from its environment when it loads them. The DSN (with the project role's password)
is then on no command line (any user can read those) and in no file.

Its working directory is an empty folder of its own: with `--config` DBHub loads a `.env` from its
working directory, and the suite's `.env` holds the suite's secrets. Its stderr (a banner and a
table per start, its errors) goes to `<results>/<run id>/dbhub-stderr.log` through `sh -c 'exec ...
2>>log'`, not to the run's console: one start per trial would drown the run's own lines. The MCP
SDK hands a stdio server only HOME, PATH, USER and the like, plus what is passed here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from harness.cases import Grant
from harness.config import ConfigError, Settings
from harness.servers.dbhub.published.install import NpmInstallError, ensure_installed, server_entry
from harness.servers.dbhub.published.pin import DSN_VARIABLE, NAMED_SERVER, READ_ONLY_CONFIG, READ_WRITE_CONFIG
from harness.servers.neon.stdio import empty_workdir

LOG_VARIABLE = "DBHUB_STDERR_LOG"
LOG_NAME = "dbhub-stderr.log"
# `$0` names the shell; "$@" is the node command: exec'd, so the MCP client's process is DBHub itself.
REDIRECT = f'exec "$@" 2>>"${LOG_VARIABLE}"'


def stderr_log(settings: Settings) -> Path:
    """Where every DBHub process of this run writes its stderr (the run's results folder)."""
    folder = (Path(settings.results_dir) / settings.run_id).resolve()  # DBHub runs in a folder of its own
    folder.mkdir(parents=True, exist_ok=True)
    return folder / LOG_NAME


def config_for(grant: Grant | None) -> Path:
    """DBHub's TOML for the case's grant: read-only mode for `readonly: true`, else read-write."""
    return READ_ONLY_CONFIG if grant is not None and grant.readonly else READ_WRITE_CONFIG


def dbhub_target(settings: Settings, dsn: str, grant: Grant | None = None) -> StdioServerParameters:
    """`sh -c 'exec "$@" 2>>log' dbhub node .../dist/index.js --transport=stdio --config=<toml>`, with
    the trial's DSN in DBHUB_TRIAL_DSN (ConfigError when DBHub cannot be installed)."""
    try:
        folder = ensure_installed()
    except NpmInstallError as error:
        raise ConfigError(f"EVAL_SERVER={NAMED_SERVER}: {error}") from None
    node, shell = shutil.which("node"), shutil.which("sh")
    if node is None or shell is None:
        raise ConfigError(f"EVAL_SERVER={NAMED_SERVER} needs node and sh on PATH")
    args = ["-c", REDIRECT, NAMED_SERVER, node, str(server_entry(folder)), "--transport=stdio"]
    args.append(f"--config={config_for(grant)}")
    env = {DSN_VARIABLE: dsn, LOG_VARIABLE: str(stderr_log(settings))}
    return StdioServerParameters(command=shell, args=args, env=env, cwd=empty_workdir())
