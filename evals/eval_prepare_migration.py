"""Prepare only: asked for a schema change, does the model stage it with `prepare_database_migration`,
report it and ask, without calling `complete_database_migration` or touching main?

One Braintrust `Eval` per model named in `EVAL_MODEL` (and per decoy count with `EVAL_DECOY_SWEEP`;
adaptive rounds and A/B arms are declared by `evals/_adaptive.py` instead), over the cases with
`scenario: prepare` (`datasets/cases/prepare.yaml`, or `EVAL_DATASET`); each trial's full record
goes to `results/<run id>/trials.jsonl`, the scores are described in docs/scores.md.

Run it alone: `.venv/bin/braintrust eval --no-send-logs evals/eval_prepare_migration.py`, or
`.venv/bin/python evals/eval_prepare_migration.py` (the same run gate and exit codes).
"""

import sys
from pathlib import Path

# `python evals/eval_prepare_migration.py` puts evals/ first on the path: import from the repository instead.
if __name__ == "__main__" and not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from braintrust import Eval

from evals._wiring import REPORTER, experiments, finish

for experiment in experiments("prepare_migration", scenario="prepare"):
    Eval(
        experiment.project,  # EVAL_PROJECT, default neon-mcp-evals
        experiment_name=experiment.name,  # prepare_migration · <model> · <server> · <description variant>
        data=experiment.data,  # one row per (case, trial index) of the prepare cases
        task=experiment.task,  # one trial in its own sandbox, returning the final answer
        scores=experiment.scores,  # main_branch_integrity, data_integrity, tool_trajectory, ...
        metadata=experiment.metadata,  # model, server, tool view, dataset hash, comparison key, base
        trial_count=experiment.trial_count,  # 1: a row is one trial, EVAL_TRIALS rows per case; --dev: per row
        parameters=experiment.parameters,  # what the playground may choose: model, description variant, decoys
        max_concurrency=experiment.concurrency,  # EVAL_CONCURRENCY, default 4
        tags=experiment.tags,  # the scenario and the provider
        reporter=REPORTER,  # pass rates with 95% intervals, pass^k, then the run gate
        update=experiment.update,  # shards of one run continue one experiment
        no_send_logs=not experiment.sending,  # run by Python without a Braintrust key: local mode
        **experiment.comparison,  # the newest like-for-like experiment as the base, or no comparison
    )

# Run by Python (`python evals/<this file>`, `python -m evals.<module>`): the same gate and exit codes.
if __name__ == "__main__":
    raise SystemExit(finish())
