"""Mark a sharded run's Braintrust experiments complete once every shard's share is merged.

    python -m braintrust_run.shards_merged RESULTS/RUN_ID

Why: each shard of the nightly continues one experiment per eval and model, and each says `partial:
shard k/n` (its share alone is not the run), so without this step no night would ever be the base
of the next night's comparison, nor of a pull request's keyed run. The nightly's `report` job runs
it after `python -m analysis.merge`, which says in the merged `run.json` whether every shard `1..n`
recorded every trial it planned. Only then is each experiment of the run given `shards_merged`
(Braintrust deep-merges the field into the stored metadata), which `is_complete` accepts.

Exit codes: 0 every experiment of the run marked, 1 the merge is not the
whole run or an experiment could not be marked, 2 the run folder or the Braintrust login is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from braintrust_run.experiments import braintrust_project, patch_metadata, project_experiments
from braintrust_run.login import load_suite_env, sending_logs
from harness.recording.store import RUN_FILE


def mark(run_dir: Path, project: str) -> tuple[int, list[str]]:
    """Mark the run's experiments in `project`; (exit code, lines to print)."""
    try:
        info: dict[str, Any] = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return 2, [f"{run_dir}: cannot read {RUN_FILE} ({error}); run `python -m analysis.merge` first"]
    coverage = info.get("shards")
    run_id = str(info.get("run_id") or run_dir.name)
    if not isinstance(coverage, dict):
        return 2, [f"{run_dir}: not a merged run (no `shards` in {RUN_FILE}); run `python -m analysis.merge` first"]
    if not coverage.get("complete"):
        problems = "; ".join(coverage.get("problems") or ["unknown"])
        return 1, [f"{run_id}: not the whole run ({problems}): its experiments stay partial, never a base"]
    if not sending_logs():
        return 2, ["no Braintrust login (BRAINTRUST_API_KEY): nothing can be marked"]
    experiments = project_experiments(project)
    if isinstance(experiments, str):
        return 1, [f"could not list the experiments of {project}: {experiments}"]
    ours = [item for item in experiments if (item.get("metadata") or {}).get("run_id") == run_id]
    if not ours:
        return 1, [f"no experiment of run {run_id} in Braintrust project {project}"]
    note = (
        f"{coverage['count']} of {coverage['count']} shards, "
        f"{coverage['recorded_trials']} of {coverage['planned_trials']} planned trials"
    )
    code, lines = 0, []
    for experiment in sorted(ours, key=lambda item: str(item.get("name"))):
        problem = patch_metadata(str(experiment["id"]), {"shards_merged": note})
        if problem is None:
            lines.append(f"{experiment.get('name')}: complete ({note}): the next run may compare with it")
        else:
            code = 1
            lines.append(f"{experiment.get('name')}: could not be marked complete: {problem}")
    return code, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m braintrust_run.shards_merged", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run", type=Path, help="the merged run folder (python -m analysis.merge OUT ...)")
    args = parser.parse_args(argv)
    load_suite_env()
    code, lines = mark(args.run, braintrust_project())
    for line in lines:
        print(f"shards merged: {line}", file=sys.stdout if code == 0 else sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
