"""Judge calibration: the factuality judge grades hand-labelled answers (`datasets/judge/`) and is
scored against the labels. Only with `EVAL_JUDGE_CALIBRATION=1` (`make calibrate`), so `make eval`
is unchanged; see `evals/_calibration.py`."""

from evals._calibration import define_calibration_evals

define_calibration_evals()
