"""Adaptive trials and paired A/B arms: trials run in rounds, and a case stops once it is decided.

Why rounds through Braintrust's own data: `Eval(data=...)` may be an async generator, consumed lazily
while the tasks it already produced run (braintrust 0.48 `framework.py`: each row becomes
`trial_count` tasks at once). So each round yields one row per (case, trial index) still wanted,
waits until those trials are recorded, decides with `analysis.sequential`, and yields the next
round. An A/B run is two `Eval`s (arms) sharing one schedule: both get the same cases and trial
indices (hence the same tool orders), and a case stops when its own paired difference is decided.
The run's verdict counts cases, one vote each (`analysis.sequential.decide_votes` over the cases
that stopped, published as `votes`); `analysis.compare` tests the same votes once the run is done.

`EVAL_TRIALS=adaptive[:MAX]` turns it on; `EVAL_AB_A`/`EVAL_AB_B` (set by `make ab`) name two arms.
Every experiment's metadata gets `adaptive`: per case, the trials run, the passes and why it stopped
(also written to `<results>/<run id>/adaptive.json`).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from braintrust import EvalCase

from analysis.passing import trial_passed
from analysis.sequential import (
    DEFAULT_ALPHA,
    DEFAULT_CUTOFF,
    DEFAULT_MARGIN,
    FINE,
    PairCounts,
    Votes,
    decide_cutoff,
    decide_paired,
    decide_votes,
)
from braintrust_run.description import Experiment, experiment_name
from braintrust_run.run_state import this_run
from braintrust_run.shard import Shard
from harness.cases import Case
from harness.config import ConfigError, Settings
from harness.recording.records import TrialRecord

ADAPTIVE = "adaptive"
OnRecord = Callable[[Case, int, TrialRecord | None], None]


@dataclass(frozen=True)
class TrialPlan:
    """`EVAL_TRIALS`: a fixed count per case, or adaptive rounds up to `max_trials`."""

    max_trials: int
    adaptive: bool = False
    alpha: float = DEFAULT_ALPHA
    cutoff: float = DEFAULT_CUTOFF
    margin: float = DEFAULT_MARGIN

    def describe(self) -> dict[str, Any]:
        return {"max_trials": self.max_trials, "alpha": self.alpha, "cutoff": self.cutoff, "margin": self.margin}


def _rate(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise ConfigError(f"{name} must be a number strictly between 0 and 1, got {text!r}")
    return value


def parse_trials(text: str, default: int, env: Mapping[str, str]) -> TrialPlan:
    """`20` (fixed), `adaptive` (up to `default`) or `adaptive:20`; anything else names the problem.
    `env` holds the EVAL_ADAPTIVE_* rates (the run's settings, `braintrust_run.settings.EvalSettings.env`)."""
    text = text.strip()
    if not text:
        return TrialPlan(default)
    if text.isdigit() and int(text) >= 1:
        return TrialPlan(int(text))
    head, _, limit = text.partition(":")
    if head.strip().lower() != ADAPTIVE or (limit and (not limit.strip().isdigit() or int(limit) < 1)):
        raise ConfigError(f"EVAL_TRIALS must be a whole number >= 1, 'adaptive' or 'adaptive:MAX', got {text!r}")
    if env.get(RENAMED_CUTOFF, "").strip():
        raise ConfigError(f"{RENAMED_CUTOFF} is now EVAL_ADAPTIVE_CUTOFF (the pass rate a case is decided against)")
    return TrialPlan(
        int(limit) if limit else default,
        adaptive=True,
        alpha=_rate(env, "EVAL_ADAPTIVE_ALPHA", DEFAULT_ALPHA),
        cutoff=_rate(env, "EVAL_ADAPTIVE_CUTOFF", DEFAULT_CUTOFF),
        margin=_rate(env, "EVAL_ADAPTIVE_MARGIN", DEFAULT_MARGIN),
    )


RENAMED_CUTOFF = "EVAL_ADAPTIVE_FLOOR"  # the cutoff's old name: refused, naming the new one, never ignored


@dataclass
class CaseState:
    case: Case
    trials: int = 0  # trial indices handed out
    results: dict[str, dict[int, bool | None]] = field(default_factory=dict)  # arm -> trial index -> passed
    stopped: str | None = None

    def summary(self, arms: list[str]) -> dict[str, Any]:
        passed = {arm: sum(1 for v in self.results.get(arm, {}).values() if v) for arm in arms}
        return {"trials": self.trials, "passed": passed if len(arms) > 1 else passed[arms[0]], "stopped": self.stopped}


class Rounds:
    """One schedule of (case, trial index) rows shared by one or two arms (A/B)."""

    def __init__(self, cases: list[Case], plan: TrialPlan, arms: list[str], concurrency: int, label: str) -> None:
        self.plan, self.arms, self.concurrency, self.label = plan, arms, concurrency, label
        self.states = {case.id: CaseState(case, results={arm: {} for arm in arms}) for case in cases}
        self.metadata: dict[str, Any] = {"mode": "adaptive" if plan.adaptive else "fixed", **plan.describe()}
        self.results_file: Path | None = None
        self._schedules: list[list[tuple[str, int]]] = []
        self._lock = asyncio.Lock()
        self._recorded = asyncio.Event()

    # -- deciding ------------------------------------------------------------------------------

    def _verdict(self, state: CaseState) -> str | None:
        if not self.plan.adaptive:
            return None
        if len(self.arms) == 1:
            outcomes = [v for v in state.results[self.arms[0]].values() if v is not None]
            verdict = decide_cutoff(sum(outcomes), len(outcomes), self.plan.cutoff, self.plan.alpha)
            return f"{verdict} cutoff {self.plan.cutoff:g}" if verdict else None
        paired = self._paired(state)
        counts = PairCounts(
            len(paired), sum(1 for a, b in paired if a and not b), sum(1 for a, b in paired if b and not a)
        )
        return decide_paired(counts, self.plan.margin, self.plan.alpha)

    def _paired(self, state: CaseState) -> list[tuple[bool, bool]]:
        """The case's trials both arms finished and could judge, as (A passed, B passed)."""
        first, second = (state.results[arm] for arm in self.arms)
        return [
            (bool(first[i]), bool(second[i]))
            for i in sorted(first)
            if i in second and first[i] is not None and second[i] is not None
        ]

    def votes(self) -> dict[str, Any]:
        """One vote per stopped case (B better, A better, tied: its pass counts over its paired trials),
        and the sequential verdict on those votes; "fine" only once no case is open, since cases that
        moved tend to stop first. Never a count of trials."""
        votes = {"b_better": 0, "a_better": 0, "tied": 0}
        open_cases = 0
        for state in self.states.values():
            if state.stopped is None:
                open_cases += 1
                continue
            paired = self._paired(state)
            a_passed, b_passed = sum(a for a, _ in paired), sum(b for _, b in paired)
            votes["b_better" if b_passed > a_passed else "a_better" if a_passed > b_passed else "tied"] += 1
        verdict = decide_votes(Votes(**votes), self.plan.margin, self.plan.alpha)
        if verdict == FINE and open_cases:
            verdict = None
        return {"unit": "cases", **votes, "open": open_cases, "verdict": verdict or "undecided"}

    def _complete(self, round_rows: list[tuple[str, int]]) -> bool:
        return all(index in self.states[case_id].results[arm] for case_id, index in round_rows for arm in self.arms)

    def _next_round(self) -> list[tuple[str, int]]:
        for state in self.states.values():
            if state.stopped is not None:
                continue
            verdict = self._verdict(state)
            if verdict:
                state.stopped = f"{verdict} after {state.trials} trials"
            elif state.trials >= self.plan.max_trials:
                state.stopped = f"max trials ({state.trials})" + (", undecided" if self.plan.adaptive else "")
        self._publish()
        open_cases = [s for s in self.states.values() if s.stopped is None]
        if not open_cases:
            return []
        per_case = self.plan.max_trials if not self.plan.adaptive else max(1, -(-self.concurrency // len(open_cases)))
        rows: list[tuple[str, int]] = []
        for state in open_cases:
            count = min(per_case, self.plan.max_trials - state.trials)
            rows.extend((state.case.id, state.trials + offset) for offset in range(count))
            state.trials += count
        return rows

    async def _schedule(self, number: int) -> list[tuple[str, int]]:
        while True:
            async with self._lock:
                if number < len(self._schedules):
                    return self._schedules[number]
                if not self._schedules or self._complete(self._schedules[-1]):
                    self._schedules.append(self._next_round())
                    continue
                self._recorded.clear()
            await self._recorded.wait()

    def _publish(self) -> None:
        self.metadata["cases"] = {case_id: s.summary(self.arms) for case_id, s in self.states.items()}
        self.metadata["trials"] = sum(s.trials for s in self.states.values())
        if len(self.arms) == 2:
            self.metadata["votes"] = self.votes()
        if self.results_file is not None:
            write_summary(self.results_file, self.label, self.metadata)

    # -- the Braintrust side -------------------------------------------------------------------

    def data(self, arm: str, row: Callable[[Case, int, int], EvalCase[str, str]]) -> Callable[[], AsyncIterator[Any]]:
        """`Eval(data=...)` for one arm: rounds of rows, each built by `row(case, trial_index, round)`."""

        async def generate() -> AsyncIterator[Any]:
            number = 0
            while rows := await self._schedule(number):
                for case_id, index in rows:
                    yield row(self.states[case_id].case, index, number)
                number += 1

        return generate

    def recorder(self, arm: str) -> OnRecord:
        """What the task calls with every finished trial (None when it raised): wakes the schedule."""

        def record(case: Case, trial_index: int, result: TrialRecord | None) -> None:
            state = self.states.get(case.id)
            if state is not None:
                passed = trial_passed(result, case) if result is not None else None  # the case the task ran
                self.record_outcome(arm, case.id, trial_index, passed)

        return record

    def record_outcome(self, arm: str, case_id: str, trial_index: int, passed: bool | None) -> None:
        """One finished trial: passed, failed, or None (not judged: infrastructure trouble)."""
        self.states[case_id].results[arm][trial_index] = passed
        self._recorded.set()


def write_summary(path: Path, label: str, metadata: dict[str, Any]) -> None:
    """Keep every experiment's adaptive summary of this process in one JSON file, rewritten whole."""
    summaries = this_run().adaptive_summaries.setdefault(path, {})
    summaries[label] = metadata
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(summaries, indent=2, sort_keys=True))
    temporary.replace(path)


# -- A/B arms ----------------------------------------------------------------------------------------


SERVER_ARM = "server:"  # `server:<EVAL_SERVER value>`: a server-design A/B (e.g. server:local vs server:dbhub)


def is_server_arm(spec: str) -> bool:
    return spec.strip().startswith(SERVER_ARM)


def arm_settings(base: Settings, spec: str, arm: str) -> tuple[str, Settings]:
    """An arm from `EVAL_AB_<arm>`: a description file (.yaml/.yml/.json), a system prompt file
    (`@path`, .txt or .md), a server (`server:<EVAL_SERVER value>`, e.g. `server:local` for the
    Neon twin, `server:dbhub`), or a model (`provider:model`). Returns its label and settings."""
    spec = spec.strip()
    run_id = f"{base.run_id}-{arm}"
    if is_server_arm(spec):
        server = spec.removeprefix(SERVER_ARM).strip()
        if not server:
            raise ConfigError(f"EVAL_AB_{arm}: {spec!r} names no server (e.g. server:local, server:dbhub)")
        settings = base.model_copy(update={"server": server, "run_id": run_id})
        return f"server {settings.server_label}", settings
    path = Path(spec.removeprefix("@"))
    if spec.startswith("@") or path.suffix.lower() in (".txt", ".md"):
        if not path.is_file():
            raise ConfigError(f"EVAL_AB_{arm}: no such system prompt file {path}")
        return f"prompt {path.stem}", base.model_copy(update={"system_prompt": path.read_text(), "run_id": run_id})
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        if not path.is_file():
            raise ConfigError(f"EVAL_AB_{arm}: no such description file {path}")
        settings = base.model_copy(update={"tool_descriptions": path, "run_id": run_id})
        return settings.description_variant, settings
    if ":" in spec:
        return spec, base.for_model(spec).model_copy(update={"run_id": run_id})
    raise ConfigError(
        f"EVAL_AB_{arm}: {spec!r} is not a description file (.yaml/.json), a system prompt (@file, .txt, .md) "
        "or a model (provider:model)"
    )


def ab_arms(base: Settings, env: Mapping[str, str]) -> list[tuple[str, str, Settings]]:
    """[("A", label, settings), ("B", label, settings)] from EVAL_AB_A/EVAL_AB_B in `env` (the run's
    settings), or [] when not set."""
    first, second = env.get("EVAL_AB_A", "").strip(), env.get("EVAL_AB_B", "").strip()
    if not first and not second:
        return []
    if not first or not second:
        raise ConfigError("an A/B run needs both EVAL_AB_A and EVAL_AB_B")
    model = base.models[0]
    if len(base.models) > 1 and (":" not in first or is_server_arm(first)):
        raise ConfigError(f"an A/B run of descriptions or prompts runs one model; EVAL_MODEL names {len(base.models)}")
    base = base.for_model(model)
    return [(arm, *arm_settings(base, spec, arm)) for arm, spec in (("A", first), ("B", second))]


# -- the Evals ---------------------------------------------------------------------------------------


def define_rounds(
    eval_name: str,
    scenario: str,
    base: Settings,
    cases: list[Case],
    plan: TrialPlan,
    concurrency: int,
    project: str,
    sweep: list[int],
    arms: list[tuple[str, str, Settings]],
    reporter: Any,
    shard: Shard | None = None,
) -> list[Experiment]:
    """The experiments of an adaptive run (one schedule per experiment) or an A/B run (one schedule
    per decoy count, shared by both arms). A shard schedules its share of the cases, each whole
    (`braintrust_run.shard.plan_pairs`), and continues the run's one experiment per eval and arm."""
    from braintrust_run.experiments import comparison_arguments
    from braintrust_run.login import sending_logs
    from braintrust_run.scoring import observed
    from braintrust_run.shard import cases_of, plan_pairs
    from braintrust_run.start import plan_start, record_dataset_at_start
    from braintrust_run.task import make_task, planned_metadata, rows
    from scorers.adapters import SCORERS

    share = cases_of(plan_pairs(cases, plan.max_trials, shard, rounds=True))
    if not share:  # more shards than this eval has cases: nothing for this one to run
        return []

    def row_builder(case: Case, trial_index: int, number: int) -> EvalCase[str, str]:
        row = rows([case])[0]
        metadata = {**dict(cast(dict[str, Any], row.metadata)), "trial_index": trial_index, "adaptive_round": number}
        return EvalCase(input=row.input, expected=row.expected, metadata=metadata, tags=row.tags, trial_count=1)

    if arms:
        groups = [
            [(f"{arm}: {label}", arm, s.model_copy(update={"decoys": d})) for arm, label, s in arms] for d in sweep
        ]
        groups = groups or [[(f"{arm}: {label}", arm, s) for arm, label, s in arms]]
    else:
        groups = [
            [(f"{model}", "run", base.for_model(model).model_copy(update={"decoys": d}))]
            for model in base.models
            for d in (sweep or [base.decoys])
        ]
    planned = {base.server}  # experiments() planned the start of EVAL_SERVER's
    made: list[Experiment] = []
    for group in groups:
        rounds = Rounds(share, plan, [arm for _, arm, _ in group], concurrency, f"{eval_name} · {group[0][0]}")
        rounds.results_file = Path(group[0][2].results_dir) / group[0][2].run_id / "adaptive.json"
        for title, arm, settings in group:
            if settings.server not in planned:  # a server arm: its own start checks (its install, its tools)
                planned.add(settings.server)
                plan_start(settings, cases, share=share)
            metadata = planned_metadata(eval_name, settings, cases, plan.max_trials, shard)
            metadata["adaptive"] = rounds.metadata
            record_dataset_at_start(project, scenario, cases, metadata)
            if len(group) > 1:
                metadata["ab_arm"] = arm
            run_id = base.run_id if shard else None  # shards of one run continue one experiment
            name = experiment_name(eval_name, title, settings, metadata["description_variant"], bool(sweep), run_id)
            made.append(
                Experiment(
                    project=project,
                    name=name,
                    data=cast(Any, rounds.data(arm, row_builder)),  # an async generator: the SDK takes it
                    task=make_task(settings, scenario, share, rounds.recorder(arm)),
                    scores=[observed(scorer) for scorer in SCORERS],  # judge errors and damage are counted
                    metadata=metadata,
                    tags=[scenario, settings.model.split(":", 1)[0], *(["ab"] if len(group) > 1 else [])],
                    concurrency=concurrency,
                    reporter=reporter,
                    sending=sending_logs(),
                    update=shard is not None,
                    comparison=comparison_arguments(project, name, metadata),  # like for like, or none
                )
            )
    return made
