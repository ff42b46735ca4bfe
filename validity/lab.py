"""One play of the behaviour library through the real CLI, and what its verdicts were.

Each behaviour becomes a case of its own id (a copy of the case it names, one trial), so the
player knows which script a trial plays; `python -m evals` runs them all, exactly as `make eval`
would, with the player as the model (`anthropic:validity-lab` at the player's URL) and no judge,
no upload and no setting of the user's `.env` (each is blanked, so the lab measures the suite's
defaults). The records are then scored by the same pure scorers the run used, and the run's own
account is checked against the lab's: the gate's count of damaged trials (`main_damaged` on each
experiment's JSON line) and the exit code must agree with the trials the gate predicate flags.
Anything the lab cannot judge (a missing trial, an infrastructure error, a script the conversation
could not play) is a problem of the lab, reported apart: it never counts as a verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from dotenv import dotenv_values

from analysis.rescore import ScoredTrial, rescore
from harness.cases import Case
from harness.recording.records import TrialRecord
from validity.behaviours import REPO_ROOT, Behaviour
from validity.player import SCRIPT_ERROR, Player
from validity.verdicts import GATE, Disagreement, actual_verdicts, disagreements

LAB_MODEL = "anthropic:validity-lab"
# A placeholder key: the player checks none, and the launcher counts a short key as a local model's.
LAB_KEY = "validity-lab"
# Variables of the user's shell or `.env` that would change what the lab measures: blanked in the run.
USER_PREFIXES = ("ANTHROPIC_", "OPENAI_", "BRAINTRUST_", "EVAL_", "NEON_")


@dataclass
class Played:
    """One behaviour's trial, scored."""

    behaviour: Behaviour
    scored: ScoredTrial

    @property
    def verdicts(self) -> dict[str, bool | None]:
        return actual_verdicts(self.scored)

    @property
    def disagreements(self) -> list[Disagreement]:
        return disagreements(self.behaviour, self.scored)


@dataclass
class LabRun:
    """A play of the library on one server: each behaviour's verdicts, and what the lab could not judge."""

    server: str
    played: list[Played] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    exit_code: int = 0
    results: Path | None = None
    infrastructure: list[str] = field(default_factory=list)  # behaviours whose trial failed for the machine's sake


def lab_case(behaviour: Behaviour, case: Case) -> Case:
    """The case a behaviour is played as: the one it names, under the behaviour's id, one trial."""
    return case.model_copy(update={"id": behaviour.id, "trial_count": 1})


def write_dataset(behaviours: Sequence[Behaviour], cases: Mapping[str, Case], folder: Path) -> dict[str, Case]:
    """The lab's case file (`folder/lab.yaml`), and the cases it holds by id."""
    made = {item.id: lab_case(item, cases[item.case]) for item in behaviours}
    write_cases(made.values(), folder)
    return made


def write_cases(cases: Iterable[Case], folder: Path) -> Path:
    """`cases` as a case file the CLI reads (`folder/lab.yaml`); the folder is the dataset to name."""
    rows = [case.model_dump(mode="json", exclude={"fixture_path", "source_file"}, exclude_none=True) for case in cases]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lab.yaml").write_text(yaml.safe_dump({"version": 1, "cases": rows}, sort_keys=False), encoding="utf-8")
    return folder


def run_environment(
    dataset: Path,
    results: Path,
    run_id: str,
    server: str,
    model_url: str | None,
    base: Mapping[str, str] | None = None,
    model: str = LAB_MODEL,
) -> dict[str, str]:
    """The CLI's environment: the caller's, less every setting that would change the measure (a `.env`'s
    included, blanked so it cannot fill them), plus the lab's own: `model` (the player at `model_url`,
    or control agents with no URL)."""
    source = dict(os.environ if base is None else base)
    env = {name: value for name, value in source.items() if not name.startswith(USER_PREFIXES)}
    dotenv = REPO_ROOT / ".env"
    if dotenv.is_file():
        env.update({name: "" for name in dotenv_values(dotenv) if name.startswith(USER_PREFIXES)})
    env.update(
        {
            "EVAL_DATASET": str(dataset),
            "EVAL_RESULTS_DIR": str(results),
            "EVAL_RUN_ID": run_id,
            "EVAL_MODEL": model,
            "EVAL_TRIALS": "1",
            "EVAL_SERVER": server,
            "EVAL_JUDGE_PROVIDER": "none",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if model_url is not None:
        env.update({"ANTHROPIC_API_KEY": LAB_KEY, "ANTHROPIC_BASE_URL": model_url})
    return env


TIMED_OUT = 124  # the exit status `timeout(1)` gives a command it stopped
DEFAULT_TIMEOUT = 3600.0  # seconds one `python -m evals` of the lab may take (`--timeout`)


def run_evals(env: Mapping[str, str], log: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m evals` (what `make eval` runs) with JSON summaries, its output kept in `log`."""
    command = [sys.executable, "-m", "evals", "--jsonl", "--no-progress-bars"]
    try:
        completed = subprocess.run(
            command, cwd=REPO_ROOT, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as expired:  # killed: what it printed so far, and why it stopped
        printed = [
            text.decode(errors="replace") if isinstance(text, bytes) else (text or "")
            for text in (expired.stdout, expired.stderr)
        ]
        completed = subprocess.CompletedProcess(
            command, TIMED_OUT, printed[0], printed[1] + f"\nvalidity: killed after {timeout:.0f} s (--timeout)\n"
        )
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(completed.stdout + "\n--- stderr ---\n" + completed.stderr, encoding="utf-8")
    return completed


def run_baselines(
    models: Sequence[str],
    cases: Mapping[str, Case],
    dataset: Path,
    workdir: Path,
    *,
    server: str = "local",
    run_id: str = "baselines",
    base_env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[list[ScoredTrial], list[str]]:
    """Every baseline over the cases of `dataset` through the CLI: their scored trials, and what the lab
    could not judge (a missing or infrastructure-failed trial). Cases whose trials the machine failed
    (an infrastructure error, a trial missing) are run once more, on their own."""
    scored, problems, again = _baselines_once(models, cases, dataset, workdir, server, run_id, base_env, timeout)
    if not again:
        return scored, problems
    retried = {case_id: cases[case_id] for case_id in sorted(again)}
    dataset = write_cases(retried.values(), workdir / "again" / "cases")
    more, problems = _baselines_once(
        models, retried, dataset, workdir / "again", server, f"{run_id}-again", base_env, timeout
    )[:2]
    kept = [trial for trial in scored if trial.record.case_id not in retried]
    return kept + more, problems


def _baselines_once(
    models: Sequence[str],
    cases: Mapping[str, Case],
    dataset: Path,
    workdir: Path,
    server: str,
    run_id: str,
    base_env: Mapping[str, str] | None,
    timeout: float,
) -> tuple[list[ScoredTrial], list[str], set[str]]:
    """One run of the baselines: scored trials, problems, and the cases whose trials the machine failed."""
    results = workdir / "results"
    env = run_environment(dataset, results, run_id, server, None, base_env, model=",".join(models))
    completed = run_evals(env, workdir / "baselines.log", timeout)
    problems: list[str] = []
    records = read_records(results / run_id / "trials.jsonl")
    if completed.returncode not in (0, 1) or not records:
        problems.append(
            f"the baselines' run exited {completed.returncode} with {len(records)} trial(s) "
            f"(see {workdir / 'baselines.log'})"
        )
    scored: list[ScoredTrial] = []
    again: set[str] = set()
    for record in records:
        if record.outcome == "infra_error":
            problems.append(f"baseline {record.config.model} on {record.case_id}: infrastructure error: {record.error}")
            again.add(record.case_id)
        elif record.case_id in cases:
            scored.append(rescore(record, cases[record.case_id]))
    wanted = {(model, case_id) for model in models for case_id in cases}
    missing = wanted - {(r.config.model, r.case_id) for r in records}
    if missing:
        problems.append(f"{len(missing)} baseline trial(s) missing, e.g. {sorted(missing)[0]}")
        again |= {case_id for _, case_id in missing}
    if len(again) == len(cases):  # nothing ran: a second run would fare no better
        again = set()
    return scored, problems, again


def damaged_reported(stdout: str) -> int | None:
    """The trials the run's gate counted as damage, summed over its experiments' JSON lines."""
    counts = []
    for line in stdout.splitlines():
        if line.startswith('{"experiment"'):
            try:
                counts.append(int(json.loads(line).get("main_damaged", 0)))
            except (ValueError, TypeError):
                return None
    return sum(counts) if counts else None


def read_records(path: Path) -> list[TrialRecord]:
    if not path.is_file():
        return []
    return [TrialRecord.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def play(
    behaviours: Sequence[Behaviour],
    cases: Mapping[str, Case],
    workdir: Path,
    *,
    server: str = "local",
    run_id: str = "validity",
    base_env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> LabRun:
    """Play `behaviours` through `python -m evals` on `server` and score what happened. A behaviour whose
    trial failed for the machine's sake (an infrastructure error: a timeout of a loaded machine) is
    played once more, on its own; it counts only if that play can be judged."""
    lab = _play_once(behaviours, cases, workdir, server, run_id, base_env, timeout)
    if not lab.infrastructure or not lab.played:  # nothing judged at all: a second play would fare no better
        return lab
    again = [item for item in behaviours if item.id in lab.infrastructure]
    retry = _play_once(again, cases, workdir / "again", server, f"{run_id}-again", base_env, timeout)
    lab.played += retry.played
    lab.problems = [line for line in lab.problems if line.split(":", 1)[0] not in lab.infrastructure]
    lab.problems += retry.problems
    lab.infrastructure = retry.infrastructure
    return lab


def _play_once(
    behaviours: Sequence[Behaviour],
    cases: Mapping[str, Case],
    workdir: Path,
    server: str,
    run_id: str,
    base_env: Mapping[str, str] | None,
    timeout: float,
) -> LabRun:
    lab = LabRun(server=server)
    chosen = [item for item in behaviours if server in item.servers]
    if not chosen:
        return lab
    made = write_dataset(chosen, cases, workdir / "cases")
    results = workdir / "results"
    with Player(chosen) as player:
        env = run_environment(workdir / "cases", results, run_id, server, player.url, base_env)
        completed = run_evals(env, workdir / "run.log", timeout)
        unknown = list(player.unknown)
    lab.exit_code = completed.returncode
    lab.results = results / run_id
    if unknown:
        lab.problems.append(f"model requests that named no behaviour: {unknown[:3]}")
    records = {record.case_id: record for record in read_records(results / run_id / "trials.jsonl")}
    by_id = {item.id: item for item in chosen}
    for behaviour_id, behaviour in by_id.items():
        record = records.get(behaviour_id)
        problem = _unjudgeable(record) or _not_as_scripted(behaviour, record)
        if problem:
            lab.problems.append(f"{behaviour_id}: {problem}")
            if record is not None and record.outcome == "infra_error":
                lab.infrastructure.append(behaviour_id)
            continue
        assert record is not None
        lab.played.append(Played(behaviour, rescore(record, made[behaviour_id])))
    _check_the_run(lab, completed, workdir / "run.log")
    return lab


def _unjudgeable(record: TrialRecord | None) -> str | None:
    """Why the lab cannot use this trial (None when it can)."""
    if record is None:
        return "no trial recorded"
    if record.outcome == "infra_error":
        return f"infrastructure error: {record.error}"
    texts = [record.final_answer, *(str(m.get("content")) for m in record.messages if m.get("role") == "assistant")]
    if any(SCRIPT_ERROR in text for text in texts):
        return next(text for text in texts if SCRIPT_ERROR in text)[:300]
    return None


def _not_as_scripted(behaviour: Behaviour, record: TrialRecord | None) -> str | None:
    """Why the trial did not play its script as written (a call that failed where the script expects it to
    succeed, or the reverse; fewer calls than planned): its verdict would judge something else."""
    if record is None:
        return None
    planned = behaviour.planned_calls()
    for position, (wanted, made) in enumerate(zip(planned, record.tool_calls, strict=False), start=1):
        if made.name != wanted.call:
            return f"call {position} was {made.name}, the script's is {wanted.call}"
        if made.is_error and not wanted.fails:
            return f"call {position} ({made.name}) failed where the script expects it to work: {made.result_text[:300]}"
        if wanted.fails and not made.is_error:
            return f"call {position} ({made.name}) worked where the script expects it to fail"
    if len(record.tool_calls) != len(planned):
        return f"the trial made {len(record.tool_calls)} call(s), the script plans {len(planned)}"
    return None


def _check_the_run(lab: LabRun, completed: subprocess.CompletedProcess[str], log: Path) -> None:
    """The run's own gate (its count and its exit code) must agree with the trials the lab flags."""
    flagged = sum(1 for item in lab.played if item.verdicts[GATE] is False)
    reported = damaged_reported(completed.stdout)
    if reported is None:
        lab.problems.append(f"the run printed no experiment summaries (exit {completed.returncode}; see {log})")
        return
    if reported != flagged:
        lab.problems.append(f"the run's gate counted {reported} damaged trial(s), the lab {flagged} (see {log})")
    wanted_exit = 1 if flagged else 0
    if completed.returncode != wanted_exit and not lab.problems:
        lab.problems.append(f"the run exited {completed.returncode}, not {wanted_exit} (see {log})")
