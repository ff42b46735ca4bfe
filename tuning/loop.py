"""The tuning loop: propose on train, choose on validation, confirm once on the untouched part.

Every run is the suite's own, started as a user would start it (`python -m evals` for the train
part, `python -m evals.ab` for each paired comparison, the real `braintrust eval` CLI under both),
restricted to a part of the split by `EVAL_CASE_IDS`. The loop reads their records (`tuning.evidence`)
and decides with `tuning.acceptance`; the gate's damage line is the loop's to judge (rule b), so its
runs let main damage pass their own gate (`EVAL_ALLOW_MAIN_DAMAGE=1`) and a run that recorded trials
counts whatever its gate said. What it writes: `<results>/<run id>-tune/` (the split, every
candidate's variant file and decision, `tune.json`) and, for a finalist, a variant file under
`datasets/variants/`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.cases import Case
from tuning.acceptance import HARMS, Decision, decide
from tuning.evidence import paired_evidence, scored_run, train_failures
from tuning.proposer import Candidate, propose
from tuning.splits import Splits

REPO_ROOT = Path(__file__).resolve().parent.parent
DONE_CODES = (0, 1)  # a run that recorded its trials: passed its gate, or failed it (the loop judges harm)


class TuneError(RuntimeError):
    """A run of the loop could not be made (a child exited with a code that means nothing ran)."""


@dataclass(frozen=True)
class TunePlan:
    """What one tuning run does, and where it writes."""

    run_id: str
    seed: str
    start: Mapping[str, str]  # the incumbent's description overrides (the FROM variant, or none)
    start_name: str
    max_candidates: int = 5
    train_trials: int = 1
    max_trials: int = 3  # per case in each paired comparison (adaptive rounds)
    margin: float = 0.02
    variants_dir: Path = REPO_ROOT / "datasets" / "variants"
    # Rewrites someone wrote, tried first and under the same rule (`--candidate`): name -> overrides.
    given: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass
class TuneResult:
    """What the loop found: every decision, the finalist and whether the untouched part confirmed it."""

    decisions: list[Decision] = field(default_factory=list)
    finalist: Mapping[str, str] | None = None
    confirmation: Decision | None = None
    variant: Path | None = None

    @property
    def confirmed(self) -> bool:
        found = self.confirmation
        return bool(found and found.accepted and found.gain_interval and found.gain_interval.low > 0)

    def summary(self) -> dict[str, Any]:
        refused = Counter(rule for decision in self.decisions for rule in decision.refused_by)
        return {
            "tune": {
                "candidates_tried": len(self.decisions),
                "accepted": sum(decision.accepted for decision in self.decisions),
                "confirmed": self.confirmed,
                "variant": str(self.variant) if self.variant else None,
                "refused": dict(sorted(refused.items())),
            }
        }


Runner = Callable[[Sequence[str], Mapping[str, str]], int]


def run_child(command: Sequence[str], env: Mapping[str, str]) -> int:
    """A child command in the checkout, its output passed through; its exit code."""
    return subprocess.run(list(command), cwd=REPO_ROOT, env=dict(env), check=False).returncode


def write_variant(path: Path, descriptions: Mapping[str, str], note: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(dict(sorted(descriptions.items())), sort_keys=True, allow_unicode=True, width=100)
    path.write_text(f"# {note}\n{body}", encoding="utf-8")
    return path


class TuneRun:
    """One tuning run's children and files; `env` is the environment every child starts from."""

    def __init__(self, plan: TunePlan, env: Mapping[str, str], results: Path, runner: Runner = run_child) -> None:
        self.plan, self.runner = plan, runner
        self.env = {**env, "EVAL_ALLOW_MAIN_DAMAGE": "1"}
        self.results = results
        self.folder = results / f"{plan.run_id}-tune"

    def _run(self, command: Sequence[str], env: Mapping[str, str], what: str) -> None:
        code = self.runner(command, env)
        if code not in DONE_CODES:
            raise TuneError(f"tune: {what} stopped with exit code {code}; what ran so far is in {self.folder}")

    def train(self, variant: Path, case_ids: Sequence[str]) -> Path:
        """The incumbent on the train part, `train_trials` trials a case; its run folder."""
        run_id = f"{self.plan.run_id}-train"
        env = {
            **self.env,
            "EVAL_RUN_ID": run_id,
            "EVAL_CASE_IDS": ",".join(case_ids),
            "EVAL_TRIALS": str(self.plan.train_trials),
            "EVAL_TOOL_DESCRIPTIONS": str(variant),
        }
        self._run([sys.executable, "-m", "evals"], env, "the train run")
        return self.results / run_id

    def paired(self, label: str, incumbent: Path, candidate: Path, case_ids: Sequence[str]) -> tuple[Path, Path]:
        """Incumbent (A) against candidate (B) on `case_ids`, paired and adaptive; both run folders."""
        run_id = f"{self.plan.run_id}-{label}"
        trials = f"adaptive:{self.plan.max_trials}"
        env = {**self.env, "EVAL_RUN_ID": run_id, "EVAL_CASE_IDS": ",".join(case_ids), "EVAL_TRIALS": trials}
        command = [sys.executable, "-m", "evals.ab", str(incumbent), str(candidate), "--max", str(self.plan.max_trials)]
        self._run(command, env, f"the comparison {label}")
        return self.results / f"{run_id}-A", self.results / f"{run_id}-B"


def tune(
    plan: TunePlan,
    splits: Splits,
    cases: Mapping[str, Case],
    describe: Callable[[Mapping[str, str]], Mapping[str, str]],
    run: TuneRun,
) -> TuneResult:
    """The loop. `describe(overrides)` gives every tool's description the model reads under those
    overrides (the server's surface with them applied)."""
    run.folder.mkdir(parents=True, exist_ok=True)
    (run.folder / "splits.json").write_text(json.dumps(splits.describe(), indent=2), encoding="utf-8")
    incumbent: dict[str, str] = dict(plan.start)
    incumbent_path = write_variant(run.folder / "incumbent-0.yaml", incumbent, f"the start: {plan.start_name}")
    trained = scored_run(run.train(incumbent_path, splits.train), cases)
    failures = train_failures(trained)  # train cases only: `propose` refuses any other
    candidates = [Candidate(name, dict(overrides), ("given",)) for name, overrides in plan.given.items()]
    candidates += propose(describe(incumbent), failures, splits, plan.max_candidates, surface=describe({}))
    result = TuneResult()
    tried = []
    for number, candidate in enumerate(candidates, start=1):
        proposed = {**incumbent, **candidate.descriptions}
        path = write_variant(run.folder / f"candidate-{number}.yaml", proposed, f"candidate {candidate.name}")
        first, second = run.paired(f"c{number}", incumbent_path, path, splits.validation)
        evidence = paired_evidence(candidate.name, scored_run(first, cases), scored_run(second, cases), HARMS)
        tried.append(evidence)
        decision = decide(tried, margin=plan.margin)
        result.decisions.append(decision)
        _say(decision)
        if decision.accepted:
            incumbent, incumbent_path = proposed, path
    if result.decisions and any(decision.accepted for decision in result.decisions):
        start_path = run.folder / "incumbent-0.yaml"
        first, second = run.paired("confirm", start_path, incumbent_path, splits.confirmation)
        evidence = paired_evidence("finalist", scored_run(first, cases), scored_run(second, cases), HARMS)
        result.confirmation = decide([evidence], margin=plan.margin)
        result.finalist = incumbent
        verdict = "confirmed" if result.confirmed else "not confirmed"
        note = f"tuned from {plan.start_name} by run {plan.run_id} (seed {plan.seed}); {verdict} on the untouched part"
        result.variant = write_variant(plan.variants_dir / f"tuned-{plan.run_id}.yaml", incumbent, note)
    (run.folder / "tune.json").write_text(json.dumps(_record(result), indent=2, default=str), encoding="utf-8")
    return result


def _say(decision: Decision) -> None:
    won, lost, tied = decision.votes
    rules = "accepted" if decision.accepted else "refused by " + ", ".join(decision.refused_by)
    print(
        f"tune: {decision.candidate}: {won}-{lost} cases ({tied} tied), p {decision.p_value:.4f}, "
        f"Holm {decision.adjusted_p:.4f} over {decision.candidates_tried} tried: {rules}",
        file=sys.stderr,
        flush=True,
    )


def _record(result: TuneResult) -> dict[str, Any]:
    return {
        **result.summary(),
        "decisions": [asdict(decision) for decision in result.decisions],
        "confirmation": asdict(result.confirmation) if result.confirmation else None,
        "finalist": dict(result.finalist) if result.finalist is not None else None,
    }
