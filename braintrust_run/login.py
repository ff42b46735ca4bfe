"""Whether this process is logged in to Braintrust: one answer for every Braintrust feature of the suite.

Why: whether the SDK has logged in when the eval files are imported depends on the door (braintrust
0.48.1, `cli/eval.py`: a plain run logs in, then imports them; `--dev` imports them and never logs in;
`--no-send-logs`, `--list` and `python evals/<file>` never log in), so at import time neither the SDK's
state nor the environment need know about `--api-key`. Checking only
`BRAINTRUST_API_KEY` silently turned off the base lookup, git info, lean uploads, the lost-upload
check and the gateway judge for a user who passed the key as a flag. Here the CLI's own argument
parser reads the command line, the flags are exported as the SDK's own variables (so the judge
route, the SDK's REST client and the CLI's later login agree), and the key is resolved the way the
SDK resolves it: the flag, the SDK's login state, `BRAINTRUST_API_KEY`, then `.env.braintrust`.

`.env`: `python -m evals` loads the repository's `.env` before it starts the CLI; `load_suite_env`
does the same for `braintrust eval evals/` started by hand (real variables win, as there), though too
late for that CLI's own login, which reads only the environment and `.env.braintrust`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType

from dotenv import load_dotenv

from harness.config import ConfigError

REPO_ROOT = Path(__file__).resolve().parent.parent
# The CLI flags that name the login, and the SDK variables that mean the same (braintrust `env.py`).
FLAG_VARIABLES = MappingProxyType(
    {"api_key": "BRAINTRUST_API_KEY", "app_url": "BRAINTRUST_APP_URL", "org_name": "BRAINTRUST_ORG_NAME"}
)


@dataclass(frozen=True)
class CliFlags:
    """What `braintrust eval` was told on its command line (only what the suite acts on)."""

    api_key: str | None = None
    app_url: str | None = None
    org_name: str | None = None
    no_send_logs: bool = False
    list: bool = False
    dev: bool = False
    filters: tuple[str, ...] = ()


def _eval_parser() -> argparse.ArgumentParser:
    """`braintrust eval`'s own parser, built by the SDK's `build_parser`, so the flags are read as it reads them."""
    from braintrust.cli import eval as cli_eval

    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--verbose", "-v", default=0, action="count")
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    cli_eval.build_parser(parser.add_subparsers(dest="subcommand"), parent)
    return parser


@cache
def _parse(argv: tuple[str, ...]) -> CliFlags | None:
    if argv[:1] != ("eval",):
        return None
    try:
        args, _ = _eval_parser().parse_known_args(list(argv))
    except (argparse.ArgumentError, SystemExit):  # the CLI itself reports a bad command line
        return None
    return CliFlags(
        api_key=args.api_key or None,
        app_url=args.app_url or None,
        org_name=args.org_name or None,
        no_send_logs=bool(args.no_send_logs),
        list=bool(args.list),
        dev=bool(args.dev),
        filters=tuple(args.filter or ()),
    )


def cli_flags(argv: Sequence[str] | None = None) -> CliFlags | None:
    """The flags of the `braintrust eval` command running this process, or None outside the CLI."""
    if argv is None:
        if "braintrust.cli.eval" not in sys.modules:
            return None
        argv = sys.argv[1:]
    return _parse(tuple(argv))


def adopt_cli_login(flags: CliFlags | None = None) -> None:
    """Export `--api-key`, `--app-url` and `--org-name` as the SDK's variables (the flag wins, as in the CLI)."""
    flags = flags if flags is not None else cli_flags()
    if flags is None:
        return
    for field, variable in FLAG_VARIABLES.items():
        value = getattr(flags, field)
        if value:
            os.environ[variable] = value  # the SDK's own variables: its REST client and login read them there


def braintrust_api_key() -> str | None:
    """The key the SDK would log in with: its login state, then `BRAINTRUST_API_KEY`, then `.env.braintrust`."""
    from braintrust.env import BraintrustEnv

    from braintrust_run.sdk_private import login_token

    token = login_token()
    if token:
        return token
    flags = cli_flags()
    if flags is not None and flags.api_key:
        return flags.api_key
    found = BraintrustEnv.API_KEY.get(None, use_dotenv=True)
    return str(found) if found else None


def export_api_key() -> None:
    """Make a key found only by the SDK (its login, `.env.braintrust`) visible as the variable: the SDK's
    REST client (the base lookup) reads only that and `.env.braintrust`, never the login; the suite's own
    readers (the judge's gateway route) get it from the settings snapshot taken after `start_login`."""
    key = braintrust_api_key()
    if key and not os.environ.get("BRAINTRUST_API_KEY"):  # the SDK's REST client reads the variable alone
        os.environ["BRAINTRUST_API_KEY"] = key


def sending_logs() -> bool:
    """Experiments go to Braintrust: a key is known and the CLI was told neither `--no-send-logs` nor `--list`."""
    flags = cli_flags()
    if flags is not None and (flags.no_send_logs or flags.list):
        return False
    return braintrust_api_key() is not None


def load_suite_env(path: Path = REPO_ROOT / ".env") -> None:
    """Load the suite's `.env` into the environment as `python -m evals` does (real variables win)."""
    try:  # into the environment: the SDKs (Braintrust's, the models') read their variables from it
        load_dotenv(path, override=False, encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def start_login() -> None:
    """Everything above, in order, before the suite reads any setting: `.env`, the CLI's flags, the SDK's key
    (the settings' snapshot, `harness.environment.process_env`, is taken after them)."""
    load_suite_env()
    adopt_cli_login()
    export_api_key()
