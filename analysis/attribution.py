"""Whose failure a failing trial is: one cause per trial, read from its record and its scores.

A pass rate says how often; a run is fixed by knowing *why*. Each failing trial gets one cause:

- `model:tool_choice`: the model picked a wrong, forbidden or destructive tool, or the wrong order
  (DDL on main through the SQL tool instead of staging it, a complete before the user approved, a
  branch left behind), or ended without an answer (turn cap, refusal, a reply cut short);
- `model:sql`: the model's SQL was wrong or harmful (the staged change misses the target, main or
  its rows differ from what was approved, a write where only a read was asked, SQL that does not
  parse, SQL still running when the trial timed out);
- `server`: the server under test failed where the model was not at fault (it crashed, hung or
  refused the transport; every call of a required tool met a server-side error);
- `harness`: the suite's own machinery failed (a sandbox that could not be made, a state capture
  that failed, the model endpoint or the results store down): `infra_error` not of the server's
  making;
- `judge`: the judge errored, or it alone failed a trial every deterministic score passed;
- `case`: the case itself is wrong, so no model could pass it: its reference SQL fails on main as
  the trial found it, or changes nothing though a change is expected, or misses the case's own
  target, or the case requires a tool the server does not offer.

An attribution of `case` or `harness` is a defect of the suite to fix. Precedence, first match wins:
infrastructure (server or harness), the case, the server's errors, then the model's tool choice
over its SQL (a wrong tool explains the harm that follows it), a model outcome without an answer,
and the judge last. Scores are read by what their metadata says (`failed_checks`, `branches_left`,
`compared_with`, `judge_error`), never by a fixed list of names, so a scorer added later is read
too: a failing deterministic score this module does not know is the model's SQL (every such score
compares state the model's SQL made).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from autoevals import Score

from analysis.summary import PASS_THRESHOLD
from harness.cases import Case
from harness.recording.dumps import normalise_dump
from harness.recording.records import Snapshot, TrialRecord
from scorers._common import arguments_of, as_run, expects_change
from scorers.main_damage import changed_main_unapproved
from scorers.registry import UnknownScorer, spec
from scorers.sqlinfo import analyse
from scorers.trajectory_safety import trial_branches

MODEL_TOOL_CHOICE: Final = "model:tool_choice"
MODEL_SQL: Final = "model:sql"
SERVER: Final = "server"
HARNESS: Final = "harness"
JUDGE: Final = "judge"
CASE: Final = "case"
CAUSES: Final = (MODEL_TOOL_CHOICE, MODEL_SQL, SERVER, HARNESS, JUDGE, CASE)  # the order every table shows
DEFECTS: Final = (CASE, HARNESS)  # the suite's own: each one is a defect to fix
REASON_CHARS = 300

# A trajectory check that faults the model's SQL rather than its choice of tool (every other check
# is about which tool, when, and in what order).
SQL_CHECKS = re.compile(
    r"touches the target"
    r"|SQL that does not parse"
    r"|sent different SQL from the migration"
    r"|applied other statements than those tried"
    r"|sent (?:a write|SQL).* in a case that asks for no change"
    r"|which this trial did not create"
)
NOT_OFFERED = re.compile(r"^required tool (\S+) was never called$")
EVERY_CALL_FAILED = re.compile(r"^required tool (\S+) was called \d+x but every call failed$")
TARGET_MISSED = re.compile(r"touches the target")
# How the harness words an infrastructure error that is the server under test's (harness/mcp/client.py,
# harness/run/trial.py): a ServerFault, a server that never answered, every call refused by its backend.
SERVER_INFRA = re.compile(
    r"ServerFault|the server (?:failed|refused|did not answer)|every tool call failed at the server", re.IGNORECASE
)
# The harness's own failures, named for the reason line (first match).
HARNESS_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"snapshot failed|capture", re.IGNORECASE), "a state capture failed"),
    (re.compile(r"results store", re.IGNORECASE), "the results store failed"),
    (
        re.compile(r"model endpoint|Overloaded|RateLimit|APIStatusError|APIConnection|APITimeout"),
        "the model endpoint failed",
    ),
    (re.compile(r"NeonAPIError|POST /projects|sandbox", re.IGNORECASE), "the trial's sandbox could not be made"),
    (re.compile(r"runner did not start"), "the trial runner did not start"),
)
# A tool error that is the server's backend failing, not the model's arguments: 5xx, a refused or reset
# connection, or an authentication the harness configured (a 4xx about the call, like an unknown
# branch id, is the model's to read and fix).
SERVER_TOOL_ERROR = re.compile(
    r"status code (?:5\d\d|401|403|429)\b|\bHTTP(?:/[\d.]+)? ?(?:5\d\d|401|403|429)\b"
    r"|\b5\d\d (?:Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout)\b"
    r"|\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT)\b|fetch failed|socket hang up",
    re.IGNORECASE,
)
SQL_STILL_RUNNING = "still running its SQL"


@dataclass(frozen=True)
class Attribution:
    """One failing trial's cause, and the evidence behind it in words."""

    cause: str
    reason: str


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _is_judge(name: str, score: Score) -> bool:
    """Whether the score is a judge's: its scorer is not deterministic (an unknown name: its metadata says)."""
    try:
        return not spec(name).deterministic
    except UnknownScorer:
        metadata = score.metadata or {}
        return "judge_template" in metadata or "judge_error" in metadata


def _failed(score: Score) -> bool:
    return score.score is not None and score.score < PASS_THRESHOLD


def failing(record: TrialRecord, scores: Mapping[str, Score]) -> bool:
    """Whether the trial failed: it did not end with an answer, a score failed, or the judge errored."""
    return (
        record.outcome != "ok"
        or any(_failed(score) for score in scores.values())
        or any((score.metadata or {}).get("judge_error") for score in scores.values())
    )


def _infrastructure(record: TrialRecord) -> Attribution:
    error = record.error or "no reason recorded"
    if SERVER_INFRA.search(error):
        return Attribution(SERVER, _short(f"the server under test failed: {error}"))
    kind = next((name for pattern, name in HARNESS_KINDS if pattern.search(error)), "infrastructure error")
    return Attribution(HARNESS, _short(f"{kind}: {error}"))


def _foreign_branch_call(record: TrialRecord) -> bool:
    """Whether the model sent anything to a branch that is neither main nor one this trial created
    (such as the harness's copy of main the expected state is built on)."""
    defaults = {record.default_branch_id, record.default_branch_name}
    for call in record.tool_calls:
        branch = arguments_of(call).get("branchId")
        if not branch or str(branch) in defaults:
            continue
        made = trial_branches(record, call)
        if not any(re.search(rf"(?<![\w-]){re.escape(str(branch))}(?![\w-])", text) for text in made):
            return True
    return False


def _same_state(first: Snapshot, second: Snapshot) -> bool:
    return (
        normalise_dump(first.schema_sql or "") == normalise_dump(second.schema_sql or "")
        and first.tables == second.tables
        and first.environment == second.environment
    )


def _checks(scores: Mapping[str, Score]) -> list[str]:
    """Every failed check a failing deterministic score lists (`failed_checks`)."""
    return [
        str(check)
        for name, score in scores.items()
        if _failed(score) and not _is_judge(name, score)
        for check in (score.metadata or {}).get("failed_checks") or []
    ]


def _case_defect(record: TrialRecord, case: Case, scores: Mapping[str, Score]) -> Attribution | None:
    """Why no model could pass this case as written, or None."""
    expected = record.expected
    reference_failed = expected is not None and (expected.error or "").startswith("reference SQL on the start copy")
    if expected is not None and reference_failed and not _foreign_branch_call(record):
        # Nothing the model did reached the copy of main the reference ran on: the reference is wrong.
        why = f"the case's reference SQL fails on main as the trial found it: {expected.error}"
        return Attribution(CASE, _short(why))
    integrity_failed = any(_failed(score) and "compared_with" in (score.metadata or {}) for score in scores.values())
    before = record.before
    if (
        integrity_failed
        and expects_change(record, case)
        and expected is not None
        and before is not None
        and not expected.error
        and not before.error
        and _same_state(expected, before)
    ):
        return Attribution(
            CASE, "the case's reference SQL changes nothing: the expected main equals main before the trial"
        )
    for check in _checks(scores):
        missing = NOT_OFFERED.match(check)
        if missing and record.tool_annotations and missing[1] not in record.tool_annotations:
            return Attribution(CASE, f"the case requires {missing[1]}, which the server does not offer")
        target = case.target
        if (
            TARGET_MISSED.search(check)
            and target is not None
            and case.reference_sql
            and not analyse(case.reference_sql).touches(target.table, target.column)
        ):
            where = target.table + (f".{target.column}" if target.column else "")
            return Attribution(CASE, f"the case's own reference SQL does not touch its target {where}")
    return None


def _server_errors(record: TrialRecord, scores: Mapping[str, Score]) -> Attribution | None:
    """A required tool that failed at the server on every call, in a trial that did not harm main."""
    if any(changed_main_unapproved(name, score) for name, score in scores.items()):
        return None
    for check in _checks(scores):
        failed = EVERY_CALL_FAILED.match(check)
        if failed is None:
            continue
        calls = record.calls_named(failed[1])
        if calls and all(call.is_error and SERVER_TOOL_ERROR.search(call.result_text) for call in calls):
            return Attribution(SERVER, _short(f"every {failed[1]} call failed at the server: {calls[0].result_text}"))
    return None


def _model(record: TrialRecord, scores: Mapping[str, Score]) -> Attribution | None:
    """The model's failure, from the scores: its tool choice first, then its SQL, then a branch left."""
    sql_evidence: list[str] = []
    left: list[str] = []
    for name, score in sorted(scores.items()):
        if not _failed(score) or _is_judge(name, score):
            continue
        metadata = score.metadata or {}
        checks = [str(check) for check in metadata.get("failed_checks") or []]
        tool_checks = [check for check in checks if not SQL_CHECKS.search(check)]
        if tool_checks:
            return Attribution(MODEL_TOOL_CHOICE, _short(f"{name}: {tool_checks[0]}"))
        if checks:
            sql_evidence.append(f"{name}: {checks[0]}")
        elif metadata.get("branches_left"):
            left.append(f"{name}: left {', '.join(str(b) for b in metadata['branches_left'])}")
        else:
            sql_evidence.append(f"{name}: {metadata.get('reason') or 'score ' + str(score.score)}")
    if sql_evidence:
        return Attribution(MODEL_SQL, _short(sql_evidence[0]))
    if left:
        return Attribution(MODEL_TOOL_CHOICE, _short(left[0]))
    if record.outcome != "ok":
        error = record.error or "no reason recorded"
        cause = MODEL_SQL if SQL_STILL_RUNNING in error else MODEL_TOOL_CHOICE
        return Attribution(cause, _short(f"no final answer ({record.outcome}): {error}"))
    return None


def _judge(scores: Mapping[str, Score]) -> Attribution | None:
    for name, score in sorted(scores.items()):
        metadata = score.metadata or {}
        if metadata.get("judge_error"):
            return Attribution(JUDGE, _short(f"the judge errored ({name}): {metadata['judge_error']}"))
    for name, score in sorted(scores.items()):
        if _failed(score) and _is_judge(name, score):
            choice = (score.metadata or {}).get("choice")
            chose = f", judge chose {choice}" if choice else ""
            return Attribution(JUDGE, _short(f"only the judge failed it: {name} {score.score:g}{chose}"))
    return None


def attribute(record: TrialRecord, case: Case, scores: Mapping[str, Score]) -> Attribution | None:
    """The one cause of a failing trial, or None when it did not fail (see the module docstring)."""
    if not failing(record, scores):
        return None
    if record.outcome == "infra_error":
        return _infrastructure(record)
    case = as_run(record, case)  # in the terms of the family that served the trial, as the scorers read it
    for found in (_case_defect(record, case, scores), _server_errors(record, scores), _model(record, scores)):
        if found is not None:
            return found
    judged = _judge(scores)  # what is left of `failing`: a judge's score failed, or the judge errored
    assert judged is not None, f"{record.case_id}#{record.trial_index}: failing, yet no rule names a cause"
    return judged
