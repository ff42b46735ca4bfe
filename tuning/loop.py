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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analysis.rescore import ScoredTrial
from harness.cases import Case
from harness.mcp.toolview import PARAMETER_SEPARATOR, TWIN_PREFIX, TWIN_SUFFIX
from tuning.acceptance import HARMS, Decision, Evidence, decide, with_twin_votes
from tuning.evidence import paired_evidence, scored_run, train_failures, twin_votes
from tuning.page import Tried, description_diff, is_confirmed, render_page
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
    command: str = ""  # the one command that runs this tuning again (on the page and in tune.json)
    model: str = ""  # the model under test, as the page names it
    budget_usd: float | None = None  # stop before a candidate whose expected spend would pass this
    # The models the finalist is confirmed with, each on its own paired run (empty: the run's model).
    confirm_models: tuple[str, ...] = ()
    max_total_trials: int | None = None  # stop before a candidate whose expected trials would pass this


@dataclass
class TuneResult:
    """What the loop found: every decision, the finalist and whether the untouched part confirmed it."""

    decisions: list[Decision] = field(default_factory=list)
    finalist: Mapping[str, str] | None = None
    confirmation: Decision | None = None  # the first confirming model's (the run's own by default)
    confirmations: dict[str, Decision] = field(default_factory=dict)  # every confirming model's, by model
    variant: Path | None = None
    tried: list[Tried] = field(default_factory=list)
    page: Path | None = None
    trials: int = 0  # trials run so far, every child run's
    spend_usd: float = 0.0  # what those trials cost, where the model has a price
    stopped_by: str | None = None  # "budget", "trials" or "interrupted" when the loop ended early

    def add_spend(self, usd: float) -> None:
        """What something besides a trial cost (the model proposer's request)."""
        self.spend_usd += usd

    @property
    def confirmed(self) -> bool:
        found = list(self.confirmations.values()) or ([self.confirmation] if self.confirmation else [])
        return bool(found) and all(is_confirmed(decision) for decision in found)

    def summary(self) -> dict[str, Any]:
        refused = Counter(rule for decision in self.decisions for rule in decision.refused_by)
        return {
            "tune": {
                "candidates_tried": len(self.decisions),
                "accepted": sum(decision.accepted for decision in self.decisions),
                "confirmed": self.confirmed,
                "variant": str(self.variant) if self.variant else None,
                "refused": dict(sorted(refused.items())),
                "page": str(self.page) if self.page else None,
                "trials": self.trials,
                "spend_usd": round(self.spend_usd, 4),
                "stopped_by": self.stopped_by,
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

    def _context(self, part: str, incumbent: str, candidate: str = "") -> str:
        """EVAL_TUNE_CONTEXT for a child: its experiments' metadata names the tuning run, the part of
        the split, the incumbent and the candidate (`braintrust_run.settings.EvalSettings.tune_context`)."""
        named = {"run": self.plan.run_id, "seed": self.plan.seed, "part": part, "incumbent": incumbent}
        if candidate:
            named["candidate"] = candidate
        return ";".join(f"{key}={value.replace(';', ',')}" for key, value in named.items())

    def train(self, variant: Path, case_ids: Sequence[str]) -> Path:
        """The incumbent on the train part, `train_trials` trials a case; its run folder."""
        run_id = f"{self.plan.run_id}-train"
        env = {
            **self.env,
            "EVAL_TUNE_CONTEXT": self._context("train", variant.stem),
            "EVAL_RUN_ID": run_id,
            "EVAL_CASE_IDS": ",".join(case_ids),
            "EVAL_TRIALS": str(self.plan.train_trials),
            "EVAL_TOOL_DESCRIPTIONS": str(variant),
        }
        self._run([sys.executable, "-m", "evals"], env, "the train run")
        return self.results / run_id

    def paired(
        self,
        label: str,
        incumbent: Path,
        candidate: Path,
        case_ids: Sequence[str],
        part: str = "validation",
        model: str = "",
    ) -> tuple[Path, Path]:
        """Incumbent (A) against candidate (B) on `case_ids`, paired and adaptive, with `model` (the
        run's own when ""); both run folders."""
        run_id = f"{self.plan.run_id}-{label}"
        trials = f"adaptive:{self.plan.max_trials}"
        env = {
            **self.env,
            "EVAL_TUNE_CONTEXT": self._context(part, incumbent.stem, candidate.stem),
            "EVAL_RUN_ID": run_id,
            "EVAL_CASE_IDS": ",".join(case_ids),
            "EVAL_TRIALS": trials,
            **({"EVAL_MODEL": model} if model else {}),
        }
        command = [sys.executable, "-m", "evals.ab", str(incumbent), str(candidate), "--max", str(self.plan.max_trials)]
        self._run(command, env, f"the comparison {label}")
        return self.results / f"{run_id}-A", self.results / f"{run_id}-B"


# A proposer: (every tool's words now, the train run's trials, the split, at most how many, where to
# report what proposing cost) -> candidates.
Proposer = Callable[
    [Mapping[str, str], Mapping[tuple[str, int], ScoredTrial], Splits, int, Callable[[float], None]], list[Candidate]
]


def offline_proposer(surface: Mapping[str, str]) -> Proposer:
    """The documented edit operators (`tuning.proposer.propose`), reading the train failures only."""

    return lambda current, trained, splits, limit, spent: propose(  # costs nothing: `spent` is never called
        current, train_failures(trained), splits, limit, surface=surface
    )


def tune(
    plan: TunePlan,
    splits: Splits,
    cases: Mapping[str, Case],
    describe: Callable[[Mapping[str, str]], Mapping[str, str]],
    run: TuneRun,
    proposer: Proposer | None = None,
) -> TuneResult:
    """The loop. `describe(overrides)` gives every tool's description the model reads under those
    overrides (the server's surface with them applied); `proposer` makes the candidates from the train
    run (the offline operators by default). A Ctrl-C keeps every finished round: the page and
    tune.json are written with what was decided, then the interrupt goes on."""
    run.folder.mkdir(parents=True, exist_ok=True)
    (run.folder / "splits.json").write_text(json.dumps(splits.describe(), indent=2), encoding="utf-8")
    result = TuneResult()
    start: dict[str, str] = dict(plan.start)
    try:
        _search(plan, splits, cases, describe, run, proposer or offline_proposer(describe({})), result)
    except KeyboardInterrupt:
        result.stopped_by = "interrupted"
        raise
    finally:
        _write(plan, run, result, describe, start)
    return result


def _search(
    plan: TunePlan,
    splits: Splits,
    cases: Mapping[str, Case],
    describe: Callable[[Mapping[str, str]], Mapping[str, str]],
    run: TuneRun,
    proposer: Proposer,
    result: TuneResult,
) -> None:
    incumbent: dict[str, str] = dict(plan.start)
    incumbent_path = write_variant(run.folder / "incumbent-0.yaml", incumbent, f"the start: {plan.start_name}")
    trained = scored_run(run.train(incumbent_path, splits.train), cases)
    _count(result, trained.values())
    candidates = [Candidate(name, dict(overrides), ("given",)) for name, overrides in plan.given.items()]
    candidates += proposer(describe(incumbent), trained, splits, plan.max_candidates, result.add_spend)
    tried: list[Evidence] = []
    for number, candidate in enumerate(candidates, start=1):
        if (reason := _over_budget(plan, result, number - 1)) is not None:
            result.stopped_by = reason
            _progress(f"tune: stopping before candidate {number}: the {reason} limit would be passed")
            break
        proposed = {**incumbent, **candidate.descriptions}
        path = write_variant(run.folder / f"candidate-{number}.yaml", proposed, f"candidate {candidate.name}")
        first, second = run.paired(f"c{number}", incumbent_path, path, splits.validation)
        arms = scored_run(first, cases), scored_run(second, cases)
        _count(result, [*arms[0].values(), *arms[1].values()])
        tried.append(paired_evidence(candidate.name, arms[0], arms[1], HARMS))
        decision = decide(tried, margin=plan.margin)
        if decision.accepted:  # the one rule left that could refuse it: words that draw whatever wears them
            words = ((incumbent, describe(incumbent)), (proposed, describe(proposed)))
            decision = _twin_check(run, result, cases, f"c{number}", decision, words, splits)
        result.decisions.append(decision)
        diff = description_diff(describe(incumbent), describe(proposed), incumbent_path.stem, path.stem)
        result.tried.append(Tried(number, decision, candidate.operators, incumbent_path.stem, diff))
        _say(decision)
        _progress(_round_line(result, number, len(candidates)))
        if decision.accepted:
            incumbent, incumbent_path = proposed, path
    if any(decision.accepted for decision in result.decisions):
        start_path = run.folder / "incumbent-0.yaml"
        for index, model in enumerate(plan.confirm_models or ("",)):
            label = "confirm" if not index else f"confirm-{index + 1}"
            first, second = run.paired(label, start_path, incumbent_path, splits.confirmation, "confirmation", model)
            arms = scored_run(first, cases), scored_run(second, cases)
            _count(result, [*arms[0].values(), *arms[1].values()])
            decided = decide([paired_evidence("finalist", arms[0], arms[1], HARMS)], margin=plan.margin)
            result.confirmations[model or plan.model or "the run's model"] = decided
            result.confirmation = result.confirmation or decided
        result.finalist = incumbent
        verdict = "confirmed" if result.confirmed else "not confirmed"
        note = f"tuned from {plan.start_name} by run {plan.run_id} (seed {plan.seed}); {verdict} on the untouched part"
        result.variant = write_variant(plan.variants_dir / f"tuned-{plan.run_id}.yaml", incumbent, note)


def _twin_check(
    run: TuneRun,
    result: TuneResult,
    cases: Mapping[str, Case],
    label: str,
    decision: Decision,
    arms: tuple[tuple[Mapping[str, str], Mapping[str, str]], tuple[Mapping[str, str], Mapping[str, str]]],
    splits: Splits,
) -> Decision:
    """Rule (d) with twins, on validation: each rewritten tool gets a decoy twin (its schema, never
    forwarded) wearing the incumbent's words in one arm and the candidate's in the other; words that
    draw the model to whatever tool wears them draw it to the twin too, and are refused. `arms`: the
    incumbent's and the candidate's (overrides, every tool's words)."""
    (before, before_words), (after, after_words) = arms
    rewritten = sorted(
        tool for tool in after_words if PARAMETER_SEPARATOR not in tool and after_words[tool] != before_words.get(tool)
    )
    if not rewritten:
        return decision
    paths = [
        write_variant(
            run.folder / f"{label}-twins-{side}.yaml",
            {**overrides, **{TWIN_PREFIX + tool: words[tool] for tool in rewritten if words.get(tool)}},
            f"the {side} with twins of {', '.join(rewritten)}",
        )
        for side, overrides, words in (("incumbent", before, before_words), ("candidate", after, after_words))
    ]
    first, second = run.paired(f"{label}-twins", paths[0], paths[1], splits.validation)
    scored = scored_run(first, cases), scored_run(second, cases)
    _count(result, [*scored[0].values(), *scored[1].values()])
    more, fewer = twin_votes(scored[0], scored[1], [tool + TWIN_SUFFIX for tool in rewritten])
    return with_twin_votes(decision, more, fewer)


def _count(result: TuneResult, trials: Iterable[ScoredTrial]) -> None:
    for trial in trials:
        result.trials += 1
        result.spend_usd += trial.record.cost_usd or 0.0


def _over_budget(plan: TunePlan, result: TuneResult, done: int) -> str | None:
    """Which limit the next candidate would pass, judged by what each candidate cost so far."""
    if not done:
        return None
    per_trial = result.spend_usd / result.trials if result.trials else 0.0
    next_trials = result.trials / (done + 1)  # the train run counts as one round's worth
    if plan.max_total_trials is not None and result.trials + next_trials > plan.max_total_trials:
        return "trials"
    if plan.budget_usd is not None and result.spend_usd + next_trials * per_trial > plan.budget_usd:
        return "budget"
    return None


def _round_line(result: TuneResult, number: int, total: int) -> str:
    """Trials run, spend so far and its estimate to the end (every remaining candidate and the confirmation)."""
    per_round = result.trials / (number + 1)
    left = (total - number + 1) * per_round
    per_trial = result.spend_usd / result.trials if result.trials else 0.0
    return (
        f"tune: round {number}/{total}: {result.trials} trials so far, ${result.spend_usd:.2f} spent; "
        f"about {left:.0f} trials (${left * per_trial:.2f}) to the end"
    )


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _write(
    plan: TunePlan,
    run: TuneRun,
    result: TuneResult,
    describe: Callable[[Mapping[str, str]], Mapping[str, str]],
    start: Mapping[str, str],
) -> None:
    """tune.json, the finalist's diff and the page: whatever the loop decided so far."""
    final = description_diff(describe(start), describe(result.finalist), "start", "finalist") if result.finalist else ""
    (run.folder / "diff.txt").write_text(final, encoding="utf-8")
    state = result.stopped_by or ("confirmed" if result.confirmed else "finished")
    facts = {
        "tuning run": plan.run_id,
        "started from": plan.start_name,
        "model": plan.model or "(as the environment sets it)",
        "split": f"seed {plan.seed}: {run.folder / 'splits.json'}",
        "margin": f"{100 * plan.margin:.1f} points",
        "trials run": str(result.trials),
        "spend": f"${result.spend_usd:.2f}",
        "variant written": str(result.variant) if result.variant else "none",
    }
    page = render_page(
        f"Tuning run {plan.run_id}", facts, result.tried, result.confirmations, final, plan.command, state
    )
    result.page = run.folder / "tune.html"
    result.page.write_text(page, encoding="utf-8")
    (run.folder / "tune.json").write_text(json.dumps(_record(result, plan), indent=2, default=str), encoding="utf-8")


def _say(decision: Decision) -> None:
    won, lost, tied = decision.votes
    rules = "accepted" if decision.accepted else "refused by " + ", ".join(decision.refused_by)
    print(
        f"tune: {decision.candidate}: {won}-{lost} cases ({tied} tied), p {decision.p_value:.4f}, "
        f"Holm {decision.adjusted_p:.4f} over {decision.candidates_tried} tried: {rules}",
        file=sys.stderr,
        flush=True,
    )


def _record(result: TuneResult, plan: TunePlan) -> dict[str, Any]:
    return {
        **result.summary(),
        "command": plan.command,
        "decisions": [asdict(decision) for decision in result.decisions],
        "confirmation": asdict(result.confirmation) if result.confirmation else None,
        "confirmations": {model: asdict(decision) for model, decision in result.confirmations.items()},
        "finalist": dict(result.finalist) if result.finalist is not None else None,
    }
