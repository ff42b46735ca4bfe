"""Gather the results of a sharded run (`EVAL_SHARD=k/n` on n machines) into one run folder.

    python -m analysis.merge OUT SHARD_RUN [SHARD_RUN ...]

Each shard keeps its own `results/<run id>/`; this writes `OUT/trials.jsonl` with every record of
every shard and `OUT/run.json` (the first shard's settings, plus the shards merged), so the
report and compare read the whole run as one. The same trial twice (same model, decoy count,
case and trial index) means two shards overlapped: that is refused, naming the trial.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.recording.records import TrialRecord
from harness.recording.store import RUN_FILE, TRIALS_FILE, load_run


class MergeError(ValueError):
    """Shard results that cannot be one run."""


def merge_runs(out: Path, runs: list[Path]) -> int:
    """Merge `runs` into `out`; returns the number of records written."""
    records: list[TrialRecord] = []
    seen: dict[tuple[str, int, str, int], Path] = {}
    info: dict[str, object] = {}
    for run in runs:
        try:
            run_info, run_records = load_run(run)
        except (OSError, ValueError) as error:
            raise MergeError(f"{run}: cannot read the run: {error}") from error
        if not run_records:
            raise MergeError(f"{run}: no trial records (is it a run folder?)")
        info = info or dict(run_info)
        for record in run_records:
            key = (record.config.model, record.config.decoy_count, record.case_id, record.trial_index)
            if key in seen:
                raise MergeError(f"{run}: trial {key} also in {seen[key]}: the shards overlap")
            seen[key] = run
            records.append(record)
    out.mkdir(parents=True, exist_ok=True)
    info["merged_from"] = [str(run) for run in runs]
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
    print(f"merged {count} trial records from {len(args.runs)} shard(s) into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
