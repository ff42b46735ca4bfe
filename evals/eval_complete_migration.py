"""Multi-turn: after staging a change, does the model apply it to main only when the user approves
(and exactly as staged), cancel it when they decline, and leave no temporary branch behind?

The Braintrust `Eval` this file declares: `define_evals("complete_migration", "complete")` in
`evals/_wiring.py` calls `Eval(project, experiment_name=..., data=..., task=..., scores=...)` once per
model named in `EVAL_MODEL` (and per decoy count with `EVAL_DECOY_SWEEP`; in rounds with
`EVAL_TRIALS=adaptive`), named `complete_migration · <model> · <server> · <description variant>`.

- data: the cases with `scenario: complete` (`datasets/cases/complete.yaml`, or `EVAL_DATASET`),
  one row per (case, trial index): `evals/_task.py`, `plan_rows`.
- task: `evals/_task.py`, `make_task`: one trial end to end in its own sandbox (`harness/run/trial.py`),
  returning the final answer; the full record goes to `results/<run id>/trials.jsonl`.
- scores: `scorers.adapters.SCORERS`, every score in `scorers/registry.py`: main_branch_integrity,
  data_integrity, tool_trajectory, temporary_branch_cleanup, factuality (see docs/scores.md).

Run it alone: `.venv/bin/braintrust eval --no-send-logs evals/eval_complete_migration.py`.
"""

from evals._wiring import define_evals

define_evals("complete_migration", "complete")
