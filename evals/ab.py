"""`make ab A=<variant> B=<variant>`: one command for a paired, adaptive A/B run and its verdict.

    python -m evals.ab A B [--max 20] [--eval evals/eval_prepare_migration.py ...]

A and B are description variant files (.yaml/.json), system prompts (@file, .txt, .md) or models
(provider:model). Both arms run through the real `braintrust eval` CLI at once, on the same cases,
trial indices and tool orders, in rounds (`EVAL_TRIALS=adaptive:MAX` unless set); a case stops when
its paired difference is decided. Then `analysis.compare` gives the verdict and the cases that moved,
and an HTML page (`analysis.ab_page`) shows the paired difference per case. With no model key and no
`EVAL_MODEL`, the arms run `control:lexical`, the baseline that reads tool descriptions.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from dotenv import load_dotenv

from analysis import ab_page
from analysis import compare as compare_cli
from evals.__main__ import REPO_ROOT, build_command
from harness.config import new_run_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.ab", description=__doc__.split("\n")[0])
    parser.add_argument("a", metavar="A", help="arm A: a description file, @system-prompt file, or provider:model")
    parser.add_argument("b", metavar="B", help="arm B, compared with A")
    parser.add_argument("--max", type=int, default=20, help="trials per case at most (default 20)")
    parser.add_argument("--eval", action="append", default=[], metavar="PATH", help="eval files (default: evals/)")
    args = parser.parse_args(argv)
    load_dotenv(REPO_ROOT / ".env", override=False)
    env = dict(os.environ)
    env["EVAL_AB_A"], env["EVAL_AB_B"] = args.a, args.b
    env.setdefault("EVAL_TRIALS", f"adaptive:{args.max}")
    run_id = env.setdefault("EVAL_RUN_ID", new_run_id())
    if not env.get("EVAL_MODEL") and not (env.get("ANTHROPIC_API_KEY") or env.get("OPENAI_API_KEY")):
        env["EVAL_MODEL"] = "control:lexical"
        print("ab: no model key and no EVAL_MODEL: both arms run control:lexical", file=sys.stderr)
    command = build_command([])
    if args.eval:
        command = [*command[:-1], *args.eval]
    child = subprocess.Popen(command, cwd=REPO_ROOT, env=env)
    try:
        code = child.wait()
    except KeyboardInterrupt:
        print("ab: interrupted; waiting for the run to clean up its sandboxes", file=sys.stderr)
        child.wait()
        return 130
    results = Path(env.get("EVAL_RESULTS_DIR") or REPO_ROOT / "results")
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
