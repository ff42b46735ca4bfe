"""`python -m evals.calibrate` (what `make calibrate` runs): calibrate the judge, then judge the judge.

Reads `.env`, switches the calibration Eval on, runs `braintrust eval` over
`evals/eval_judge_calibration.py` (adding `--no-send-logs` without `BRAINTRUST_API_KEY`, as
`make eval` does), then `python -m analysis.calibrate` on the run with the suite's bar
(`--min-kappa 0.8`). Each judge model first meets the preflight the evals use (one tiny forced
classification, and a check that forced tool choice is honoured): a route that cannot judge is
NOT TRUSTED at once, exit 2, instead of 80 judge errors later. Every example is judged
`EVAL_CALIBRATION_REPEATS` times (default 2; a bad value stops it at once). Exits non-zero when no judge is
configured, a judge is refused, the eval fails, or a judge is not trusted. Extra arguments go to
`braintrust eval`.
"""

from __future__ import annotations

import subprocess
import sys

from analysis import calibrate
from braintrust_run.calibration import SWITCH, judge_models
from braintrust_run.settings import CalibrationConfigError, EvalSettings, launch_environment
from evals.__main__ import REPO_ROOT, build_command
from harness.config import new_run_id
from scorers.judge_client import JudgePreflightError, judge_settings, no_judge_reason, preflight

EVAL_FILE = REPO_ROOT / "evals" / "eval_judge_calibration.py"


def main(argv: list[str] | None = None) -> int:
    env = launch_environment(REPO_ROOT / ".env")  # the eval's environment: .env, then the choices below
    judge = judge_settings(env)
    if judge is None:
        print(f"calibrate: {no_judge_reason(env)}", file=sys.stderr)
        return 2
    try:
        repeats = EvalSettings.from_env(env).calibration_repeats
    except CalibrationConfigError as error:
        print(f"calibrate: {error}", file=sys.stderr)
        return 2
    for model in judge_models(judge, env):
        # Calibration judges no model under test, so a judge sharing an endpoint with EVAL_MODEL is fine here.
        try:
            preflight({**env, "EVAL_JUDGE_MODEL": model, "EVAL_JUDGE_SHARED_ENDPOINT": "1"})
        except JudgePreflightError as error:
            print(f"calibrate: {error}", file=sys.stderr)
            print(f"calibrate: judge {model}: verdict: NOT TRUSTED (refused at the preflight, nothing judged)")
            return 2
    env[SWITCH] = "1"
    run_id = env.setdefault("EVAL_RUN_ID", new_run_id())
    run_dir = EvalSettings.from_env(env).results_dir / run_id
    if not run_dir.is_absolute():
        run_dir = REPO_ROOT / run_dir
    env["EVAL_RESULTS_DIR"] = str(run_dir.parent)
    print(
        f"calibrate: judge {judge.describe()}; each example judged {repeats} times; verdicts go to {run_dir}",
        file=sys.stderr,
    )
    command = build_command(list(sys.argv[1:] if argv is None else argv), EVAL_FILE, env=env)
    code = subprocess.run(command, cwd=REPO_ROOT, env=env).returncode
    if not (run_dir / "judge_calibration.jsonl").is_file():
        print(f"calibrate: the eval wrote no verdicts (exit code {code})", file=sys.stderr)
        return code or 1
    verdict = calibrate.main([str(run_dir), "--min-kappa", str(calibrate.TRUST_KAPPA)])
    return code or verdict


if __name__ == "__main__":
    raise SystemExit(main())
