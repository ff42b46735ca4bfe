"""`python -m evals` (what `make eval` runs): read `.env`, choose the CLI flags, run `braintrust eval`.

The Braintrust CLI has no environment variable for offline mode, so this launcher decides: with no
`BRAINTRUST_API_KEY` (nor `--api-key`, which it adopts as that variable) it adds `--no-send-logs`
(Braintrust's local mode) and says so. Offline runs
default to a small trial count. Extra arguments are passed through to `braintrust eval`. Ctrl-C and
SIGTERM reach the CLI, which deletes in-flight sandboxes; the launcher waits for it (exit 130 / 143).
It chooses the run id (unless `EVAL_RUN_ID` is set) so that it can end by saying where the records
went and the command that opens the report. A CLI ended by a signal it could not handle (SIGKILL:
the OOM killer, `kill -9`) finished nothing: the launcher says which signal, how many of the planned
trials were recorded and what to run next, and exits 128 + the signal's number, as a shell reports it.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

from braintrust_run.doors import resolve_run
from braintrust_run.settings import EvalSettings, launch_environment
from harness.config import ConfigError, new_run_id
from harness.recording.store import planned_trials, recorded_trials

REPO_ROOT = Path(__file__).resolve().parent.parent
# A key shorter than this is a placeholder (`local`, `ollama`, `not-needed`): no provider's real key is.


def build_command(
    extra_args: list[str], target: Path = REPO_ROOT / "evals", env: Mapping[str, str] | None = None
) -> list[str]:
    """The `braintrust eval` command line for `env` (default: this process's), over `target` (all evals)."""
    executable = shutil.which("braintrust", path=str(Path(sys.executable).parent)) or shutil.which("braintrust")
    command = [executable] if executable else [sys.executable, "-m", "braintrust"]
    command += ["eval", "--terminate-on-failure"]
    if not EvalSettings.from_env(env).braintrust_api_key:
        command.append("--no-send-logs")
    return [*command, *extra_args, str(target)]


def adopt_api_key_flag(extra_args: list[str], env: dict[str, str]) -> None:
    """`python -m evals --api-key K` logs in as `BRAINTRUST_API_KEY=K` would: the launcher's own choices
    (local mode or not, the judge's route) and the CLI's then agree (the flag wins, as in the CLI).
    `env` is the environment the CLI will be given."""
    for position, arg in enumerate(extra_args):
        if arg == "--api-key" and position + 1 < len(extra_args):
            env["BRAINTRUST_API_KEY"] = extra_args[position + 1]
        elif arg.startswith("--api-key="):
            env["BRAINTRUST_API_KEY"] = arg.split("=", 1)[1]


def main(argv: list[str] | None = None) -> int:
    try:  # the CLI's environment: .env under the real one, then the launcher's choices below
        env = launch_environment(REPO_ROOT / ".env")
    except UnicodeDecodeError as error:
        print(f"evals: {REPO_ROOT / '.env'}: not UTF-8 text ({error.reason} at byte {error.start})", file=sys.stderr)
        return 2
    extra = list(sys.argv[1:] if argv is None else argv)
    adopt_api_key_flag(extra, env)
    try:  # the run's choices and the lines that say them, as every other door makes them (braintrust_run/doors.py)
        lines = resolve_run(env, sending=bool(env.get("BRAINTRUST_API_KEY")) and "--no-send-logs" not in extra)
    except ConfigError as error:
        print(f"evals: stopping before any trial: {error}", file=sys.stderr)
        return 2
    for line in lines:
        print(f"evals: {line}", file=sys.stderr, flush=True)
    run_id = env.setdefault("EVAL_RUN_ID", new_run_id())
    command = build_command(extra, env=env)
    results = EvalSettings.from_env(env).results_dir
    before = recorded_trials(run_folder(run_id, results))  # a continued run (a shard, EVAL_RUN_ID again) has some
    child = subprocess.Popen(command, cwd=REPO_ROOT, env=env)
    code = wait_for(child)
    if code < 0:  # ended by a signal it could not handle: no summary, no gate, no cleanup
        say_how_the_signal_ended_it(-code, child.pid, run_folder(run_id, results), before)
        return 128 - code
    say_where_the_records_went(run_folder(run_id, results))
    return code


def run_folder(run_id: str, results_dir: Path) -> Path:
    """The run's results folder, where the CLI (run from the checkout) writes it."""
    run_dir = results_dir / run_id
    return run_dir if run_dir.is_absolute() else (REPO_ROOT / run_dir)


def shown_path(path: Path) -> Path:
    """`path` as the user is shown it: relative to where they are, when it is under there."""
    here = Path.cwd()
    return path.relative_to(here) if path.is_relative_to(here) else path


def say_how_the_signal_ended_it(signum: int, pid: int, folder: Path, before: int) -> None:
    """A run killed outright: which signal, how far it got, and that nothing after the trials happened."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    trials = shown_path(folder / "trials.jsonl")
    recorded = recorded_trials(folder) - before
    planned = planned_trials(folder, pid)
    count = f"{recorded} of {planned} planned trials were" if planned is not None else f"{recorded} trial(s) were"
    print(
        f"evals: the eval process (braintrust eval, pid {pid}) was killed by {name} before it finished; "
        f"{count} recorded in {trials}. No summary, gate or cleanup ran: the run is incomplete "
        f"(exit {128 + signum}); `make janitor` removes the sandboxes and the local server it left",
        file=sys.stderr,
    )


def say_where_the_records_went(shown: Path) -> None:
    """The run's folder and the command that turns it into a page (nothing when no record was written)."""
    if not (shown / "trials.jsonl").exists():
        return
    python = Path(sys.executable)
    here = Path.cwd()
    if python.is_relative_to(here):
        python = python.relative_to(here)
    where = shown_path(shown)
    print(f"evals: records in {where}/trials.jsonl", file=sys.stderr)
    print(f"evals: report: {python} -m analysis.report {where}  (writes {where}/report.html)", file=sys.stderr)


def wait_for(child: subprocess.Popen[bytes]) -> int:
    """The CLI's exit code, passing SIGTERM on and waiting out Ctrl-C (the CLI cleans up first): 130 or
    143 once an interrupted run has cleaned up. Python ends an interrupted CLI by SIGINT, after its
    cleanup (an unhandled KeyboardInterrupt); any other signal ended it before it finished (SIGKILL,
    a crash): then minus the signal's number, as `Popen.returncode` has it, for `main` to say so."""
    stopped: list[int] = []

    def forward_sigterm(signum: int, frame: FrameType | None) -> None:
        # `docker stop` signals only this process; `timeout` signals the group (the CLI ignores repeats).
        if not stopped:
            print("evals: SIGTERM; waiting for the run to clean up its sandboxes", file=sys.stderr, flush=True)
        stopped.append(signal.SIGTERM)
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward_sigterm)
    while True:
        try:
            code = child.wait()
            if code == -signal.SIGINT or (stopped and code >= 0):  # interrupted, and it cleaned up
                return 128 + (stopped[0] if stopped else signal.SIGINT)
            return code
        except KeyboardInterrupt:
            # The CLI got the same Ctrl-C and is deleting its sandboxes: wait for it, do not orphan it.
            stopped.append(signal.SIGINT)
            print("evals: interrupted; waiting for the run to clean up its sandboxes", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
