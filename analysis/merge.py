"""Gather the results of a sharded run (`EVAL_SHARD=k/n` on n machines) into one run folder.

    python -m analysis.merge OUT SHARD_RUN [SHARD_RUN ...]

Each shard keeps its own `results/<run id>/`; this writes `OUT/trials.jsonl` with every record of
every shard, `OUT/scores.jsonl` with every score they kept, and `OUT/run.json` (the first shard's
settings, plus the shards merged), so the report and compare read the whole run as one. The same
trial twice (same model, decoy count, case and trial index) means two shards overlapped: that is
refused, naming the trial; so are shards scored by different scorer versions (`scorer_versions`).

`run.json` also says whether the merge is the whole run (`shards`): every shard `1..n` present once,
each having recorded every trial it planned (its `plan.json`). Only then does
`python -m braintrust_run.shards_merged` mark the night's Braintrust experiments as complete, so that they
can be the base of the next run's comparison (a shard's share alone never is).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from analysis.stored_scores import SCORES_FILE, VERSIONS_KEY, ScoresFileError, StoredScore, load_scores
from harness.recording.records import TrialRecord
from harness.recording.store import RUN_FILE, TRIALS_FILE, load_run, read_plan


class MergeError(ValueError):
    """Shard results that cannot be one run."""


def shard_coverage(runs: list[Path], recorded: list[int]) -> dict[str, Any]:
    """Whether the shards in `runs` (each having recorded `recorded[i]` trials) make a whole run,
    and if not, why: a shard missing, one twice, or one with fewer records than it planned."""
    plans = [read_plan(run) for run in runs]
    named = [str(plan.get("shard") or "") for plan in plans]
    counts = {name.partition("/")[2] for name in named}
    problems: list[str] = []
    if "" in counts or len(counts) != 1:
        problems.append("not every folder names its shard as k/n of one count")
        total = 0
    else:
        total = int(counts.pop())
        missing = [f"{index}/{total}" for index in range(1, total + 1) if f"{index}/{total}" not in named]
        twice = sorted({name for name in named if named.count(name) > 1})
        problems += [f"shard {name} missing" for name in missing] + [f"shard {name} twice" for name in twice]
    for run, plan, name, count in zip(runs, plans, named, recorded, strict=True):
        planned = plan.get("trials")
        if not isinstance(planned, int):
            problems.append(f"{name or run}: its plan has no trial count")
        elif count < planned:
            problems.append(f"shard {name or run}: {count} of {planned} planned trials recorded")
    planned_total = sum(plan.get("trials") or 0 for plan in plans if isinstance(plan.get("trials"), int))
    return {
        "count": total,
        "merged": sorted(name for name in named if name),
        "planned_trials": planned_total,
        "recorded_trials": sum(recorded),
        "complete": not problems,
        "problems": problems,
    }


def merge_runs(out: Path, runs: list[Path]) -> int:
    """Merge `runs` into `out`; returns the number of records written."""
    records: list[TrialRecord] = []
    seen: dict[tuple[str, int, str, int], Path] = {}
    info: dict[str, object] = {}
    recorded: list[int] = []
    scores: list[StoredScore] = []
    versions: dict[str, tuple[str, Path]] = {}  # score -> (version, the first shard naming it)
    for run in runs:
        try:
            run_info, run_records = load_run(run)
            run_scores = load_scores(run) or []
        except (OSError, ValueError, ScoresFileError) as error:
            raise MergeError(f"{run}: cannot read the run: {error}") from error
        if not run_records:
            raise MergeError(f"{run}: no trial records (is it a run folder?)")
        info = info or dict(run_info)
        scores.extend(run_scores)
        noted = run_info.get(VERSIONS_KEY)
        for name, version in (noted if isinstance(noted, dict) else {}).items():
            first = versions.setdefault(name, (version, run))
            if first[0] != version:
                raise MergeError(
                    f"{run}: scored by {name} {version}, {first[1]} by {first[0]}: shards of one run are scored "
                    "by one version of each scorer"
                )
        recorded.append(len(run_records))
        for record in run_records:
            key = (record.config.model, record.config.decoy_count, record.case_id, record.trial_index)
            if key in seen:
                raise MergeError(f"{run}: trial {key} also in {seen[key]}: the shards overlap")
            seen[key] = run
            records.append(record)
    out.mkdir(parents=True, exist_ok=True)
    info["merged_from"] = [str(run) for run in runs]
    info["shards"] = shard_coverage(runs, recorded)
    if versions:
        info[VERSIONS_KEY] = {name: version for name, (version, _) in sorted(versions.items())}
    if scores:
        (out / SCORES_FILE).write_text("".join(item.model_dump_json() + "\n" for item in scores), encoding="utf-8")
    (out / RUN_FILE).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    text = "".join(record.model_dump_json() + "\n" for record in records)
    (out / TRIALS_FILE).write_text(text, encoding="utf-8")
    return len(records)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.merge", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write the merged run to")
    parser.add_argument("runs", type=Path, nargs="+", help="the shards' run folders")
    args = parser.parse_args(argv)
    try:
        count = merge_runs(args.out, args.runs)
    except MergeError as error:
        print(f"merge: {error}", file=sys.stderr)
        return 2
    coverage = json.loads((args.out / RUN_FILE).read_text(encoding="utf-8"))["shards"]
    whole = "the whole run" if coverage["complete"] else "not the whole run: " + "; ".join(coverage["problems"])
    print(f"merged {count} trial records from {len(args.runs)} shard(s) into {args.out}: {whole}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
