"""Judge calibration: the factuality judge grades hand-labelled answers (`datasets/judge/`) and is
scored against the labels. Only with `EVAL_JUDGE_CALIBRATION=1` (`make calibrate`), so `make eval`
is unchanged.

The Braintrust `Eval` this file declares: `define_calibration_evals()` in `evals/_calibration.py`
calls `Eval(project, experiment_name=..., data=..., task=..., scores=...)` once per judge model in
`EVAL_CALIBRATION_JUDGES` (default the configured judge), named
`judge_calibration · <judge model> · factuality@<template version>`.

- data: the labelled examples (`datasets/judge/`, or `EVAL_JUDGE_DATASET`), one row each, the
  label as the expected output: `evals/_calibration.py`, `rows`.
- task: `evals/_calibration.py`, `make_task`: the judge itself, through autoevals with the
  production template (`scorers/templates/factuality.yaml`), returning its choice A-E.
- scores: `exact_choice` (1 when the judge chose the label) and `score_distance`
  (1 - |score of its choice - score of the label|): `evals/_calibration.py`, `make_scorers`.

Then `python -m analysis.calibrate` reads the verdicts (see docs/calibration.md).
"""

from evals._calibration import define_calibration_evals
from evals._login import start_login

start_login()  # `.env` and `braintrust eval --api-key`, as for the other evals (evals/_login.py)
define_calibration_evals()
