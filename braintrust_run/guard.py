"""Bad input stops `braintrust eval` with a non-zero exit, however the CLI was started.

Why: the CLI imports each eval file and, without `--terminate-on-failure`, prints an import error
and carries on with the other files, so `braintrust eval evals/` on a broken dataset exited 0
having measured nothing. A `SystemExit` is not an `Exception`, so the CLI cannot swallow it.

`check_start` is everything that can be known before the first trial and would otherwise cost
the whole run (every trial an `infra_error`, or a gate that crashes after the money is spent).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import psycopg

from analysis.stored_scores import VERSIONS_KEY
from braintrust_run import gate
from braintrust_run.experiments import probed_view
from harness.cases import Case, DatasetError
from harness.config import ConfigError, Settings
from harness.environment import host
from harness.recording.redact import redact_connection_passwords
from harness.recording.store import ResultsStore
from harness.servers.registry import family_for
from scorers.judge_client import JudgePreflightError
from scorers.registry import SCORERS
from scorers.versions import scorer_versions

P = ParamSpec("P")
R = TypeVar("R")
EXIT_BAD_INPUT = 2
DATABASE_CONNECT_TIMEOUT = 5  # seconds


def stops_the_run(define: Callable[P, R]) -> Callable[P, R]:
    """Turn a dataset or configuration error raised while defining evals into a clean exit 2."""

    @functools.wraps(define)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return define(*args, **kwargs)
        except (DatasetError, ConfigError, ValueError, JudgePreflightError) as error:
            print(f"evals: stopping before any trial: {error}", file=sys.stderr, flush=True)
            raise SystemExit(EXIT_BAD_INPUT) from error

    return guarded


def check_start(settings: Settings, cases: list[Case]) -> None:
    """Raise ConfigError (or ValueError) for anything that would spoil every trial of this run."""
    gate.check_limits()
    store = ResultsStore(settings.results_dir, settings.run_id)
    problem = store.reuse_problem(settings) or versions_problem(store)
    if problem:
        raise ConfigError(problem)
    check_database_url(settings)
    check_tools(settings, cases)


def versions_problem(store: ResultsStore) -> str | None:
    """Why this run may not add scores to the run folder already there: its scores were made by other
    scorer versions than this process's (one folder, one set of versions; `scores.jsonl`)."""
    noted = store.run_info().get(VERSIONS_KEY)
    if not isinstance(noted, dict):
        return None
    today = scorer_versions(SCORERS)
    changed = [
        f"{name}: {noted[name]} then, {version} now"
        for name, version in today.items()
        if name in noted and noted[name] != version
    ]
    if not changed:
        return None
    return (
        f"EVAL_RUN_ID={store.run_dir.name}: {store.run_dir} was scored by other scorer versions "
        f"({'; '.join(changed[:3])}); use a new EVAL_RUN_ID, or remove that folder"
    )


def check_database_url(settings: Settings) -> None:
    """The local server keeps its projects in DATABASE_URL's PostgreSQL: a dead one fails every trial."""
    url = (host().database_url or "").strip()
    if not url or settings.server_kind not in ("local", "stdio"):
        return
    try:
        with psycopg.connect(url, connect_timeout=DATABASE_CONNECT_TIMEOUT):
            pass
    except psycopg.Error as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        shown = redact_connection_passwords(url)
        raise ConfigError(f"DATABASE_URL={shown}: cannot connect: {settings.scrub(first)}") from None


def check_tools(settings: Settings, cases: list[Case]) -> None:
    """A model shown no tool, or none of the tools a case needs, measures nothing: stop, naming the cause.

    A server that cannot be asked is left to the trials (each is then an `infra_error`, which the gate counts)."""
    view = probed_view(settings)
    if isinstance(view, str):
        return
    count, _, names = view
    cause = (
        f"EVAL_TOOL_FILTER={settings.tool_filter!r}"
        if settings.tool_filter
        else f"EVAL_SERVER={settings.scrub(settings.server)}"
    )
    if count == 0:
        raise ConfigError(f"{cause} leaves the model no tool to call; change it so the server's tools are shown")
    shown = set(names)
    family = family_for(settings)
    for case in map(family.case_for, cases):  # the tools a case needs, in the server family's terms
        if case.required_tools and not shown & set(case.required_tools):
            raise ConfigError(
                f"{cause}: case '{case.id}' needs {', '.join(case.required_tools)}, none of which the model is "
                f"shown (it sees {', '.join(sorted(shown)[:8])}{'...' if len(shown) > 8 else ''})"
            )
