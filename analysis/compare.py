"""Compare two groups of trials, paired case by case: is B really better or worse than A?

    python -m analysis.compare RUN_A RUN_B [--model-a M] [--model-b M] [--score NAME ...]
                                           [--dataset PATH] [--bootstrap 2000] [--seed 0] [--json]

The command only wires three modules together: `analysis.runs` loads the runs, `analysis.compare_stats`
pairs and tests them (pure functions), `analysis.compare_render` prints the result. Both runs are
re-scored with today's scorers; a run whose scores were made by older scorer versions is named, with
those versions, on the first lines (and under `scorer_versions` in the JSON).
"""

from __future__ import annotations

import argparse
import json
import sys

from analysis.compare_render import as_json, render
from analysis.compare_stats import compare
from analysis.rescore import DETERMINISTIC_NAMES, today_versions
from analysis.runs import Group, RunInputError, load_group, run_folder
from analysis.stored_scores import VersionNote, note_for_run
from analysis.stored_scores import as_json as note_json
from harness.cases import DatasetError, load_cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.compare",
        description="Compare two runs (or two models of runs) case by case: one vote per case, an exact sign "
        "test, a bootstrap over cases.",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="run folder, its trials.jsonl, or a run id under results/")
    parser.add_argument("run_b", metavar="RUN_B", help="the run compared with A (may be the same run, another model)")
    parser.add_argument("--model-a", help="the model of run A to compare (required when the run holds several)")
    parser.add_argument("--model-b", help="the model of run B to compare")
    parser.add_argument(
        "--score",
        nargs="+",
        action="extend",
        choices=sorted(DETERMINISTIC_NAMES),
        metavar="NAME",
        help="scores (default: all)",
    )
    parser.add_argument("--dataset", help="case file or folder (default: EVAL_DATASET, then the bundled cases)")
    parser.add_argument("--bootstrap", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    if args.bootstrap < 1:
        parser.error("--bootstrap must be at least 1")
    try:
        group_a = load_group(args.run_a, args.model_a, "model-a")
        group_b = load_group(args.run_b, args.model_b, "model-b")
        cases = load_cases(args.dataset)
        comparison = compare(
            group_a.records,
            group_b.records,
            cases,
            list(dict.fromkeys(args.score or DETERMINISTIC_NAMES)),
            resamples=args.bootstrap,
            seed=args.seed,
        )
    except (RunInputError, DatasetError) as error:
        print(f"compare: error: {error}", file=sys.stderr)
        return 2
    today = today_versions()
    notes = {"a": _note(group_a, today), "b": _note(group_b, today)}
    if args.json:
        data = as_json(comparison, group_a, group_b)
        data["scorer_versions"] = {"today": today, **{side: note_json(note) for side, note in notes.items()}}
        print(json.dumps(data, sort_keys=True))
    else:
        lead = [] if notes["a"].unknown else notes["a"].lines(f"run A ({group_a.path})")
        if group_b.path != group_a.path and not notes["b"].unknown:
            lead += notes["b"].lines(f"run B ({group_b.path})")
        print("\n".join([*lead, render(comparison, group_a, group_b)]))
    return 0


def _note(group: Group, today: dict[str, str]) -> VersionNote:
    """How the versions that scored `group`'s run differ from today's (a run naming none: `unknown`)."""
    return note_for_run(run_folder(group.path), group.info, today)


if __name__ == "__main__":
    sys.exit(main())
