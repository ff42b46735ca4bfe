"""The run's own choices, made the same way whichever door starts it, and the first lines that say them.

A run can be started by `make eval` or `python -m evals` (the launcher, which starts the CLI),
`braintrust eval evals/` or one file of it, `python evals/eval_x.py` or `python -m evals.eval_x`.
Each used to choose differently: only the launcher took Neon's published surface for the local twin
and the offline trial count, so the mission's own command measured another surface and said nothing.
Here the choices are made once, by the first process that starts the run, into the environment every
later process inherits (`RESOLVED` marks them made): the launcher makes them for the CLI it starts,
and an eval file started any other way makes them at import, before any setting is read.

One difference no eval file can mend: `braintrust eval` without a Braintrust key and without
`--no-send-logs` logs in before it imports any eval file (braintrust 0.48.1, `cli/eval.py`: `login`,
then `run_once`), so it stops with the SDK's own message before this module runs; `make eval` adds the
flag for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping

from braintrust_run.settings import OFFLINE_DEFAULT_TRIALS
from harness.config import ConfigError
from harness.models.providers.registry import model_key_variables, model_rules, provider_spec
from harness.servers.neon.worn_surface import FILE_ENV as SURFACE_FILE_ENV
from harness.servers.neon.worn_surface import SurfaceChoiceError
from harness.servers.neon.worn_surface import choose as choose_surface
from scorers.judge_client import TIMEOUT_VARIABLE, judge_settings, no_judge_reason

RESOLVED = "EVAL_RUN_RESOLVED"  # set by the process that made the run's choices; its children keep them
PLACEHOLDER_KEY_LENGTH = 20  # a key shorter than this is a placeholder (a local server takes any)
LOCAL_MODE = "no BRAINTRUST_API_KEY, running in Braintrust's local mode (--no-send-logs)"


def wear_surface(env: MutableMapping[str, str]) -> str:
    """Choose the local twin's surface (`LOCALNEON_SURFACE_FILE` in `env`) and say it; a run on another
    server sees that server's own words. SurfaceChoiceError for a choice that cannot be honoured."""
    server = (env.get("EVAL_SERVER") or "local").strip()
    if server != "local":
        return "surface: the server under test's own (EVAL_SERVER is not the local twin)"  # a URL may hold a key
    chosen = choose_surface(env)
    if chosen.path is not None:
        env[SURFACE_FILE_ENV] = str(chosen.path)
    return chosen.line()


def local_models(env: Mapping[str, str]) -> str | None:
    """Why every model `EVAL_MODEL` names looks like a local one (no known price, a placeholder key),
    or None: such a run gets the small offline trial count unless EVAL_TRIALS says otherwise."""
    models = [model.strip() for model in env.get("EVAL_MODEL", "").split(",") if model.strip()]
    described = []
    for model in models:
        spec = provider_spec(model.partition(":")[0])
        rules = model_rules(model)
        keys = [var.name for var in spec.required if var.secret] if spec is not None else []
        placeholders = [name for name in keys if 0 < len(env.get(name, "").strip()) < PLACEHOLDER_KEY_LENGTH]
        if rules is None or rules.price is not None or not keys or placeholders != keys:
            return None
        described.append(f"{model} is in no price table and {', '.join(keys)} is a placeholder")
    return f"{'; '.join(described)} (a local model)" if described else None


def judge_line(env: Mapping[str, str] | None = None) -> str:
    """The first lines' word on the judge in `env` (default: this process's): where it runs, or why there
    is none, naming what turned it off (EVAL_JUDGE_PROVIDER=none is not a missing key). A bad judge
    setting raises ValueError."""
    judge = judge_settings(env)
    if judge is None:
        return f"factuality is n/a: {no_judge_reason(env)}"
    return f"factuality judge: {judge.describe()} (timeout {judge.timeout_s:g} s a request, {TIMEOUT_VARIABLE})"


def logging_line(env: Mapping[str, str], *, sending: bool) -> str | None:
    """Where the experiments go when not to Braintrust: its local mode, and why."""
    if sending:
        return None
    if not env.get("BRAINTRUST_API_KEY"):
        return LOCAL_MODE
    return "running in Braintrust's local mode (--no-send-logs): BRAINTRUST_API_KEY is not used"


def resolve_run(env: MutableMapping[str, str], *, sending: bool) -> list[str]:
    """Make the run's choices in `env` (the environment the run's processes will read) and return the
    lines that say them, in order. ConfigError, naming what was wrong, for a choice that cannot be made."""
    try:
        lines = [wear_surface(env)]  # whose words the tools are described in (the twin wears Neon's by default)
    except SurfaceChoiceError as error:
        raise ConfigError(str(error)) from None
    local = local_models(env)
    if local and not env.get("EVAL_TRIALS"):  # 20 trials a case would take days on a CPU
        env["EVAL_TRIALS"] = OFFLINE_DEFAULT_TRIALS
        lines.append(f"{local}: {OFFLINE_DEFAULT_TRIALS} trials a case (set EVAL_TRIALS for more)")
    logging = logging_line(env, sending=sending)
    if logging:
        lines.append(logging)
    if not any(env.get(name) for name in model_key_variables()) and not env.get("EVAL_TRIALS"):
        env["EVAL_TRIALS"] = OFFLINE_DEFAULT_TRIALS
    try:
        lines.append(judge_line(env))
    except ValueError as error:  # a judge setting that cannot work (EVAL_JUDGE_TIMEOUT): before any trial
        raise ConfigError(str(error)) from None
    env[RESOLVED] = "1"
    return lines


def resolve_here(*, sending: bool) -> None:
    """In an eval file started without the launcher: make the run's choices in this process's environment,
    before any setting is read, and print the lines the launcher would have printed. Once per process
    (and not at all under the launcher, which made them for it)."""
    if os.environ.get(RESOLVED):
        return
    env = dict(os.environ)
    lines = resolve_run(env, sending=sending)  # a ConfigError stops the run in the caller's guard, said once
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value  # the settings' snapshot is taken after this (`start_login`)
    for line in lines:
        print(f"evals: {line}", file=sys.stderr, flush=True)
