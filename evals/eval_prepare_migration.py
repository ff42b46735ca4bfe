"""Prepare only: asked for a schema change, does the model stage it with `prepare_database_migration`,
report it and ask, without calling `complete_database_migration` or touching main?

The Braintrust `Eval` this file declares: `define_evals("prepare_migration", "prepare")` in
`evals/_wiring.py` calls `Eval(project, experiment_name=..., data=..., task=..., scores=...)` once per
model named in `EVAL_MODEL` (and per decoy count with `EVAL_DECOY_SWEEP`; in rounds with
`EVAL_TRIALS=adaptive`), named `prepare_migration · <model> · <server> · <description variant>`.

- data: the cases with `scenario: prepare` (`datasets/cases/prepare.yaml`, or `EVAL_DATASET`),
  one row per (case, trial index): `evals/_task.py`, `plan_rows`.
- task: `evals/_task.py`, `make_task`: one trial end to end in its own sandbox (`harness/run/trial.py`),
  returning the final answer; the full record goes to `results/<run id>/trials.jsonl`.
- scores: `scorers.adapters.SCORERS`, every score in `scorers/registry.py`: main_branch_integrity,
  data_integrity, tool_trajectory, temporary_branch_cleanup, factuality (see docs/scores.md).

Run it alone: `.venv/bin/braintrust eval --no-send-logs evals/eval_prepare_migration.py`.
"""

from evals._wiring import define_evals

define_evals("prepare_migration", "prepare")
