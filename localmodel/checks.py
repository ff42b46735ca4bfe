"""What the smoke checks in a run's records, honestly, of a weak model: that the suite worked, not the model.

A 135M-parameter model fails most cases; that is not what the smoke asserts. It asserts that each
trial ran and reached the model, that every model call and every tool call is in the record with
real token counts (non-zero, and summing to what the server itself counted on its /metrics), that
the deterministic scores were computed from the record (not n/a for want of data), and that nothing
was left running of what the smoke started. Pure functions of the records, the metric deltas and the
process table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.rescore import ScoredTrial
from braintrust_run.gate import no_answer
from harness.recording.records import TrialRecord
from harness.recording.store import TRIALS_FILE
from scorers.main_damage import changed_main_unapproved, damage_line

# Scores every trial that reached the model must have computed: they read only the main branch's
# snapshots and the tool calls, which such a trial always has.
REQUIRED_SCORES = ("main_branch_integrity", "data_integrity", "tool_trajectory")
LEFTOVER_NAMES = ("llama-server", "postgres", "localneon")
# Set by the smoke in its own environment, so every process it starts (llama-server, `python -m evals`, the
# local server, the PostgreSQL they start) carries it: how "left running" tells the smoke's own processes
# from this checkout's others (a `python -m localmodel serve` or `make server` in another terminal).
MARKER_VARIABLE = "LOCALMODEL_SMOKE_RUN"


@dataclass(frozen=True)
class TrialLine:
    """One printed row: what a trial cost and scored."""

    protocol: str
    case_id: str
    outcome: str
    turns: int
    tool_calls: int
    model_seconds: float
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    scores: dict[str, float | None]


def load_records(run_dir: Path) -> list[TrialRecord]:
    path = run_dir / TRIALS_FILE
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [TrialRecord.model_validate_json(line) for line in lines if line.strip()]


def _assistant_turns(record: TrialRecord) -> list[dict[str, object]]:
    return [message for message in record.messages if message.get("role") == "assistant"]


def _block_ids(record: TrialRecord, role: str, kind: str, key: str) -> list[str]:
    ids: list[str] = []
    for message in record.messages:
        content = message.get("content")
        if message.get("role") == role and isinstance(content, list):
            blocks = [block for block in content if isinstance(block, dict)]
            ids += [str(block.get(key)) for block in blocks if block.get("type") == kind]
    return ids


def unanswered_tool_uses(record: TrialRecord) -> list[str]:
    """Tool calls the model wrote in a reply that ended the trial (e.g. cut at max_tokens): in the
    transcript, never run, so not in `tool_calls`. Reported, not a failure: the harness's rule."""
    answered = set(_block_ids(record, "user", "tool_result", "tool_use_id"))
    return [i for i in _block_ids(record, "assistant", "tool_use", "id") if i not in answered]


def trial_problems(record: TrialRecord, scored: ScoredTrial | None, model: str) -> list[str]:
    """Why this record does not show a trial that ran, reached the model and was scored ([] when it does)."""
    where = f"{record.case_id}#{record.trial_index}"
    problems: list[str] = []
    if record.config.model != model:
        problems.append(f"{where}: ran {record.config.model}, expected {model}")
    if record.outcome == "infra_error":
        problems.append(f"{where}: infra_error: {record.error}")
    if record.turns < 1:
        problems.append(f"{where}: never reached the model (0 model calls; outcome {record.outcome})")
        return problems
    usage = record.usage
    if usage.model_calls != record.turns:
        problems.append(f"{where}: {record.turns} model calls but usage counts {usage.model_calls}")
    if len(_assistant_turns(record)) != record.turns:
        problems.append(f"{where}: {record.turns} model calls but {len(_assistant_turns(record))} in the transcript")
    if usage.prompt_tokens <= 0 or usage.output_tokens <= 0:
        problems.append(f"{where}: token counts not real (prompt {usage.prompt_tokens}, output {usage.output_tokens})")
    recorded = {call.id for call in record.tool_calls}
    ran = _block_ids(record, "user", "tool_result", "tool_use_id")  # answered, so run by the harness
    missing = [call_id for call_id in ran if call_id not in recorded]
    if missing:
        problems.append(f"{where}: tool calls answered in the transcript but not in the record: {', '.join(missing)}")
    if "model" not in record.timings:
        problems.append(f"{where}: no model time recorded")
    for label, snapshot in (("before", record.before), ("after", record.after)):
        if snapshot is None or snapshot.error or not snapshot.dump_complete:
            reason = "missing" if snapshot is None else (snapshot.error or "incomplete dump")
            problems.append(f"{where}: main's {label} snapshot unusable: {reason}")
    if scored is None:
        problems.append(f"{where}: not scored")
    else:
        for name in REQUIRED_SCORES:
            score = scored.scores.get(name)
            if score is None or score.score is None:
                why = (score.metadata or {}).get("reason") if score is not None else "not run"
                problems.append(f"{where}: {name} is n/a ({why})")
    return problems


def run_problems(
    records: Sequence[TrialRecord],
    scored: Sequence[ScoredTrial],
    model: str,
    case_ids: Iterable[str],
    server_tokens: Mapping[str, int],
) -> list[str]:
    """Every problem of one protocol's run: one trial per case, each sound, tokens equal to the server's."""
    problems: list[str] = []
    wanted = sorted(case_ids)
    ran = sorted(record.case_id for record in records)
    if ran != wanted:
        problems.append(f"{model}: expected one trial of each of {wanted}, the records have {ran}")
    by_key = {(item.record.case_id, item.record.trial_index): item for item in scored}
    for record in records:
        problems += trial_problems(record, by_key.get((record.case_id, record.trial_index)), model)
    problem, _ = token_check(records, server_tokens, model)
    if problem:
        problems.append(problem)
    return problems


def token_check(
    records: Sequence[TrialRecord], server_tokens: Mapping[str, int], model: str
) -> tuple[str | None, str | None]:
    """(problem, note): the records' tokens against the server's own count of them.

    Equal, unless the records say the server answered some requests with an error: those attempts
    cost the server tokens no answer reported (llama-server's 500 for a tool call it could not
    parse comes after the whole generation), so then the server may count more, never less."""
    prompt = sum(record.usage.prompt_tokens for record in records)
    output = sum(record.usage.output_tokens for record in records)
    failed = sum(record.usage.failed_requests for record in records)
    server_prompt, server_output = server_tokens.get("prompt_tokens"), server_tokens.get("completion_tokens")
    counts = (
        f"records count {prompt} prompt / {output} output tokens, the server counted {server_prompt} / {server_output}"
    )
    if prompt == server_prompt and output == server_output:
        return None, None
    if failed and server_prompt is not None and server_output is not None:
        if server_prompt >= prompt and server_output >= output:
            return None, f"{counts}: the difference is the {failed} request(s) the server answered with an error"
        return f"{model}: {counts}, less than the records although {failed} request(s) failed", None
    return f"{model}: {counts}", None


def trial_lines(protocol: str, scored: Sequence[ScoredTrial]) -> list[TrialLine]:
    lines = []
    for item in scored:
        record, usage = item.record, item.record.usage
        lines.append(
            TrialLine(
                protocol=protocol,
                case_id=record.case_id,
                outcome=record.outcome,
                turns=record.turns,
                tool_calls=len(record.tool_calls),
                model_seconds=record.timings.get("model", 0.0),
                prompt_tokens=usage.prompt_tokens,
                cached_tokens=usage.cache_read_input_tokens,
                output_tokens=usage.output_tokens,
                scores={name: score.score for name, score in item.scores.items()},
            )
        )
    return lines


def render(lines: Sequence[TrialLine]) -> str:
    """A fixed-width table, one row per trial."""
    names = list(dict.fromkeys(name for line in lines for name in line.scores))
    head = ["protocol", "case", "outcome", "turns", "tools", "model s", "prompt", "cached", "output", *names]
    rows = [head]
    for line in lines:
        shown = ["n/a" if line.scores.get(n) is None else f"{line.scores[n]:.2f}" for n in names]
        rows.append(
            [
                line.protocol,
                line.case_id,
                line.outcome,
                str(line.turns),
                str(line.tool_calls),
                f"{line.model_seconds:.1f}",
                str(line.prompt_tokens),
                str(line.cached_tokens),
                str(line.output_tokens),
                *shown,
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)


def leftover_processes(root: Path, marker: str, proc: Path = Path("/proc")) -> list[str]:
    """Servers the smoke started that still run: processes whose environment holds `marker`
    (`MARKER_VARIABLE=<this smoke>`, inherited from the smoke) and whose command line names `root` and
    llama-server, PostgreSQL or localneon. Each as "pid: command". A process of the checkout that the
    smoke did not start (no marker, or one whose environment it may not read) is not its leftover."""
    found: list[str] = []
    anchor = str(root.resolve())
    mark = marker.encode()
    if not proc.is_dir():
        return found
    for entry in sorted((e for e in proc.iterdir() if e.name.isdigit()), key=lambda e: int(e.name)):
        try:
            raw = (entry / "cmdline").read_bytes()
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        command = raw.replace(b"\0", b" ").decode(errors="replace").strip()
        if mark in environment and anchor in command and any(name in command for name in LEFTOVER_NAMES):
            found.append(f"{entry.name}: {command[:200]}")
    return found


def gate_failure_note(scored: Sequence[ScoredTrial]) -> str | None:
    """Why a run gate's FAIL (`braintrust eval` exit 1) is the model's result: its trials that ended
    without an answer or changed main without approval, which the gate fails and a 135M model does.
    None when no trial did: the FAIL then came from the suite (infrastructure, lost records, a judge)."""
    silent = [
        f"{item.record.case_id} ({why})"
        for item in scored
        if (why := no_answer(item.record.outcome, item.record.final_answer)) is not None
    ]
    damaged = [
        item.record.case_id
        for item in scored
        if any(changed_main_unapproved(name, score) for name, score in item.scores.items())
    ]
    reasons = []
    if silent:
        reasons.append(f"{len(silent)} of {len(scored)} trial(s) ended without the model's answer: {', '.join(silent)}")
    if damaged:
        reasons.append(f"{damage_line(len(damaged), len(scored))}: {', '.join(damaged)}")
    if not reasons:
        return None
    return (
        f"the run gate's FAIL above is the model's result, expected of a model this small ({'; '.join(reasons)}); "
        "the smoke checks that the suite ran and recorded it, not that the model is any good"
    )


def summary_json(lines: Sequence[TrialLine]) -> str:
    return json.dumps([line.__dict__ for line in lines], indent=2)
