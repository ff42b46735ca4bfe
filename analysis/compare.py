"""Compare two groups of trials, paired case by case: is B really better or worse than A?

    python -m analysis.compare RUN_A RUN_B [--model-a M] [--model-b M] [--score NAME ...]
                                           [--dataset PATH] [--bootstrap 2000] [--seed 0] [--json]

The command only wires three modules together: `analysis.runs` loads the runs, `analysis.compare_stats`
pairs and tests them (pure functions), `analysis.compare_render` prints the result.
"""

from __future__ import annotations

import argparse
import json
import sys

from analysis.compare_render import as_json, render
from analysis.compare_stats import compare
from analysis.rescore import DETERMINISTIC_NAMES
from analysis.runs import RunInputError, load_group
from harness.cases import DatasetError, load_cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.compare",
        description="Compare two runs (or two models of runs) pair by pair: exact McNemar test, bootstrap over cases.",
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
    if args.json:
        print(json.dumps(as_json(comparison, group_a, group_b), sort_keys=True))
    else:
        print(render(comparison, group_a, group_b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
