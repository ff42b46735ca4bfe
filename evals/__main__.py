"""`python -m evals` (what `make eval` runs): read `.env`, choose the CLI flags, run `braintrust eval`.

The Braintrust CLI has no environment variable for offline mode, so this launcher decides: with no
`BRAINTRUST_API_KEY` it adds `--no-send-logs` (Braintrust's local mode) and says so. Offline runs
default to a small trial count. Extra arguments are passed through to `braintrust eval`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dotenv import load_dotenv

from scorers.judge import judge_settings

REPO_ROOT = Path(__file__).resolve().parent.parent
OFFLINE_DEFAULT_TRIALS = "2"


def build_command(extra_args: list[str]) -> list[str]:
    """The `braintrust eval` command line for the current environment."""
    executable = shutil.which("braintrust", path=str(Path(sys.executable).parent)) or shutil.which("braintrust")
    command = [executable] if executable else [sys.executable, "-m", "braintrust"]
    command += ["eval", "--terminate-on-failure"]
    if not os.environ.get("BRAINTRUST_API_KEY"):
        command.append("--no-send-logs")
    return [*command, *extra_args, str(REPO_ROOT / "evals")]


def main(argv: list[str] | None = None) -> int:
    load_dotenv(REPO_ROOT / ".env", override=False)
    extra = list(sys.argv[1:] if argv is None else argv)
    if not os.environ.get("BRAINTRUST_API_KEY"):
        print("evals: no BRAINTRUST_API_KEY, running in Braintrust's local mode (--no-send-logs)", file=sys.stderr)
    has_model_key = bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("OPENAI_API_KEY"))
    if not has_model_key and not os.environ.get("EVAL_TRIALS"):
        os.environ["EVAL_TRIALS"] = OFFLINE_DEFAULT_TRIALS
    judge = judge_settings()
    if judge is None:
        print(
            "evals: no judge configured: factuality is n/a (set BRAINTRUST_API_KEY, ANTHROPIC_API_KEY or "
            "OPENAI_BASE_URL)",
            file=sys.stderr,
        )
    else:
        print(f"evals: factuality judge: {judge.describe()}", file=sys.stderr)
    command = build_command(extra)
    child = subprocess.Popen(command, cwd=REPO_ROOT)
    interrupted = False
    while True:
        try:
            code = child.wait()
            return 130 if interrupted else code
        except KeyboardInterrupt:
            # The CLI got the same Ctrl-C and is deleting its sandboxes: wait for it, do not orphan it.
            interrupted = True
            print("evals: interrupted; waiting for the run to clean up its sandboxes", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
