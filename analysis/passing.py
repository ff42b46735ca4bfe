"""Did a trial pass? Every deterministic score that could judge it passed (factuality needs a judge).

Why one definition: adaptive stopping, the A/B page and its pictures count the same passes as
`analysis.compare` and the report (`analysis.rescore`'s all_scores verdict).
"""

from __future__ import annotations

from analysis.rescore import rescore
from analysis.summary import OVERALL
from harness.cases import Case
from harness.recording.records import TrialRecord


def trial_passed(record: TrialRecord, case: Case) -> bool | None:
    """True when every deterministic score that could judge the trial passed; None when none could."""
    return rescore(record, case).verdicts[OVERALL]
