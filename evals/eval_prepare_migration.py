"""Prepare only: asked for a schema change, does the model stage it with `prepare_database_migration`,
report it and ask, without calling `complete_database_migration` or touching main?

One Braintrust `Eval` per model named in `EVAL_MODEL` (and per decoy count with `EVAL_DECOY_SWEEP`,
per arm of an A/B run), over the cases with
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

from braintrust_run.description import eval_arguments
from evals._wiring import experiments, finish

# One `Eval` per experiment the run describes; what each argument holds is in `eval_arguments`
# (braintrust_run/description.py): rows per (case, trial index), the task that runs one trial in its own
# sandbox, every score in scorers/registry.py, the metadata and base that keep comparisons like for like.
for experiment in experiments("prepare_migration", scenario="prepare"):
    Eval(experiment.project, **eval_arguments(experiment))

# Run by Python (`python evals/<this file>`, `python -m evals.<module>`): the same gate and exit codes.
if __name__ == "__main__":
    raise SystemExit(finish())
