"""`make ab A=<variant> B=<variant>`: one command for a paired, adaptive A/B run and its verdict.

    python -m evals.ab A B [--max 20] [--eval evals/eval_prepare_migration.py ...]

A and B are description variant files (.yaml/.json), system prompts (@file, .txt, .md), models
(provider:model) or servers (`server:<EVAL_SERVER value>`: a server-design A/B, e.g. `server:local`,
the Neon twin with its staging tools, vs `server:dbhub`, Bytebase's DBHub with SQL alone). Both arms
run through the real `braintrust eval` CLI at once, on the same cases, trial indices and tool orders,
in rounds (`EVAL_TRIALS=adaptive:MAX` unless set); a case stops when its paired difference is
decided. Then `analysis.compare` gives the verdict and the cases that moved, and an HTML page
(`analysis.ab_page`) shows the paired difference per case. With no model key and no `EVAL_MODEL`,
the arms run `control:lexical`, the baseline that reads tool descriptions; a server-design A/B runs
`control:oracle` instead (it speaks both servers' tools), which proves the plumbing, not a model.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys

from analysis import ab_page
from analysis import compare as compare_cli
from braintrust_run.adaptive import is_server_arm
from braintrust_run.doors import RESOLVED, wear_surface
from braintrust_run.settings import EvalSettings, launch_environment
from evals.__main__ import REPO_ROOT, build_command
from harness.config import new_run_id
from harness.servers.neon.surface_label import SurfaceChoiceError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.ab", description=__doc__.split("\n")[0])
    parser.add_argument(
        "a", metavar="A", help="arm A: a description file, @system-prompt file, provider:model or server:<EVAL_SERVER>"
    )
    parser.add_argument("b", metavar="B", help="arm B, compared with A")
    parser.add_argument("--max", type=int, default=20, help="trials per case at most (default 20)")
    parser.add_argument("--eval", action="append", default=[], metavar="PATH", help="eval files (default: evals/)")
    args = parser.parse_args(argv)
    env = launch_environment(REPO_ROOT / ".env")  # the run's environment: .env, then the arms below
    env["EVAL_AB_A"], env["EVAL_AB_B"] = args.a, args.b
    try:  # both arms wear one surface (a description variant applies on top of it); the page names it
        print(f"ab: {wear_surface(env)}", file=sys.stderr, flush=True)
        env[RESOLVED] = "1"  # the arms' trials and judge are ab's own choices (below); the CLI keeps them
    except SurfaceChoiceError as error:
        print(f"ab: stopping before any trial: {error}", file=sys.stderr)
        return 2
    env.setdefault("EVAL_TRIALS", f"adaptive:{args.max}")
    run_id = env.setdefault("EVAL_RUN_ID", new_run_id())
    if not env.get("EVAL_MODEL") and not (env.get("ANTHROPIC_API_KEY") or env.get("OPENAI_API_KEY")):
        servers = is_server_arm(args.a) and is_server_arm(args.b)
        env["EVAL_MODEL"] = "control:oracle" if servers else "control:lexical"
        print(f"ab: no model key and no EVAL_MODEL: both arms run {env['EVAL_MODEL']}", file=sys.stderr)
    command = build_command([], env=env)
    if args.eval:
        command = [*command[:-1], *args.eval]
    child = subprocess.Popen(command, cwd=REPO_ROOT, env=env)
    try:
        code = child.wait()
    except KeyboardInterrupt:
        print("ab: interrupted; waiting for the run to clean up its sandboxes", file=sys.stderr)
        child.wait()
        return 130
    results = REPO_ROOT / EvalSettings.from_env(env).results_dir  # an absolute folder stays itself
    run_a, run_b = results / f"{run_id}-A", results / f"{run_id}-B"
    if code != 0:
        print(f"ab: the run failed (exit {code}); results so far: {run_a} and {run_b}", file=sys.stderr)
        return code
    compare_args = [str(run_a), str(run_b)]
    if env.get("EVAL_DATASET"):
        compare_args += ["--dataset", env["EVAL_DATASET"]]
    print()
    compared = compare_cli.main(compare_args)
    if compared != 0:
        return compared
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        compare_cli.main([*compare_args, "--json"])
    page = ab_page.write(
        run_a, run_b, json.loads(captured.getvalue()), results / f"{run_id}-ab.html", env.get("EVAL_DATASET")
    )
    print(f"\nab: A = {args.a}, B = {args.b}; page: {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
