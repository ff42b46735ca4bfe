"""Judge calibration: the factuality judge grades hand-labelled answers (`datasets/judge/`) and is
scored against the labels. Only with `EVAL_JUDGE_CALIBRATION=1` (`make calibrate`), so `make eval`
is unchanged.

The Braintrust `Eval`s this file declares, as the other eval files do: one per experiment
`calibration_experiments()` (`braintrust_run/calibration.py`) describes, a judge model of
`EVAL_CALIBRATION_JUDGES` each (default the configured judge), named
`judge_calibration · <judge model> · factuality@<template version>`.

- data: the labelled examples (`datasets/judge/`, or `EVAL_JUDGE_DATASET`), one row each, the
  label as the expected output: `braintrust_run/calibration.py`, `rows`.
- task: `braintrust_run/calibration.py`, `make_task`: the judge itself, through autoevals with the
  production template (`scorers/templates/factuality.yaml`), asked `EVAL_CALIBRATION_REPEATS` times
  (default 2, each a fresh request past any response cache), returning its first choice A-E.
- scores: `exact_choice` (1 when the judge chose the label), `score_distance`
  (1 - |score of its choice - score of the label|) and `self_agreement` (1 when every repeat chose
  the same): `braintrust_run/calibration.py`, `make_scorers`.

Then `python -m analysis.calibrate` reads the verdicts (see docs/calibration.md).
"""

from braintrust import Eval

from braintrust_run.calibration import calibration_experiments
from braintrust_run.description import eval_arguments
from braintrust_run.login import start_login

start_login()  # `.env` and `braintrust eval --api-key`, as for the other evals (braintrust_run/login.py)
for experiment in calibration_experiments():
    Eval(experiment.project, **eval_arguments(experiment))
