"""No case is passed by doing nothing unless its file says doing nothing is right: an agent that
answers with one sentence and calls no tool (main untouched) fails every other bundled case's
deterministic scores. The lab's baseline run shows it through the CLI (`make validity`); this checks
every case in a moment, on the scorers alone."""

from __future__ import annotations

import pytest

from analysis.rescore import rescore
from analysis.summary import OVERALL
from harness.cases import Case, load_cases
from harness.models.control.idle import REASSURANCE
from harness.recording.records import DUMP_COMPLETE_MARKER, Snapshot, TableFingerprint, TrialConfig, TrialRecord

MAIN = Snapshot(
    schema_sql=f"CREATE TABLE public.t (id integer);\n-- {DUMP_COMPLETE_MARKER}\n",
    tables={"public.t": TableFingerprint(rows=3, content_hash="abc")},
)
CHANGED = MAIN.model_copy(
    update={"schema_sql": f"CREATE TABLE public.t (id integer, x text);\n-- {DUMP_COMPLETE_MARKER}\n"}
)
CASES = load_cases()


def idle_trial(case: Case) -> TrialRecord:
    """What `control:idle` leaves: its sentence after every message, no call, main as it was."""
    turns = [case.input, *case.follow_ups]
    messages = [
        message
        for text in turns
        for message in (
            {"role": "user", "content": text},
            {"role": "assistant", "content": [{"type": "text", "text": REASSURANCE}]},
        )
    ]
    return TrialRecord(
        case_id=case.id,
        config=TrialConfig(model="control:idle", server="local"),
        follow_ups=list(case.follow_ups),
        final_answer=REASSURANCE,
        messages=messages,
        before=MAIN,
        at_approval=MAIN if case.approval == "approve" else None,
        after=MAIN,
        expected=CHANGED if case.expected_main == "changed" else None,
    )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_doing_nothing_fails_every_case_that_does_not_say_it_is_right(case: Case) -> None:
    verdict = rescore(idle_trial(case), case).verdicts[OVERALL]
    assert verdict is (case.nothing_needed is not None), f"{case.id}: all_scores {verdict}"
