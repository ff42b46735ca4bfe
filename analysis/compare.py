"""Compare two groups of trials, paired case by case: is B really better or worse than A?

Two pass rates whose Wilson intervals overlap prove nothing, but the same cases run under A and B
are paired, and a paired test is far more sensitive: only the discordant pairs (A passed and B
failed, or the reverse) carry evidence. So trials are paired by (case_id, trial_index), every
record is re-scored offline with the deterministic scorers, and per score we report an exact
McNemar test on the discordant pairs and a bootstrap interval of the difference that resamples
cases (trials of one case are correlated, so resampling trials would overstate the evidence).

    python -m analysis.compare RUN_A RUN_B [--model-a M] [--model-b M] [--score NAME ...]
                                           [--dataset PATH] [--bootstrap 2000] [--seed 0] [--json]

The statistics are pure functions (`mcnemar_exact`, `paired_bootstrap`, `compare`); loading and
printing are kept apart from them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from autoevals import Score

from analysis.stats import ALPHA, Interval, mcnemar_exact, paired_bootstrap, pass_hat_k, trials_needed, wilson_interval
from analysis.summary import OVERALL, PASS_THRESHOLD
from harness.cases import Case, DatasetError, load_cases
from harness.records import TrialRecord
from harness.store import TRIALS_FILE, load_run
from scorers import cleanup, data_integrity, integrity, trajectory

BETTER, WORSE, SAME = "B better", "B worse", "no significant difference"

PureScorer = Callable[[TrialRecord, Case], Score]
# The deterministic scorers; factuality needs an LLM judge, so re-scoring it offline is not reproducible.
SCORERS: dict[str, PureScorer] = {
    integrity.NAME: integrity.main_branch_integrity,
    data_integrity.NAME: data_integrity.data_integrity,
    trajectory.NAME: trajectory.tool_trajectory,
    cleanup.NAME: cleanup.temporary_branch_cleanup,
}


class CompareError(ValueError):
    """Input that cannot be compared (a bad path, an empty run, an unknown case): the CLI exits 2."""


# -- the comparison --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupStat:
    """One side's pass rate over the paired, scorable trials of one score."""

    passed: int
    trials: int
    interval: Interval | None
    pass_hat: dict[int, float | None]

    @property
    def rate(self) -> float | None:
        return self.passed / self.trials if self.trials else None


@dataclass(frozen=True)
class CaseChange:
    """A case whose pass count moved between A and B (over the same number of paired trials)."""

    case_id: str
    a_passed: int
    b_passed: int
    trials: int


@dataclass(frozen=True)
class ScoreComparison:
    """Everything said about one score: both sides, the paired difference and the test behind the verdict."""

    name: str
    pairs: int  # paired trials where both sides could be scored
    dropped: int  # paired trials left out because A's, B's or both trials were unscorable
    unscorable_a: int
    unscorable_b: int
    a: GroupStat
    b: GroupStat
    a_pass_b_fail: int  # McNemar's b
    a_fail_b_pass: int  # McNemar's c
    difference: float | None  # pass rate of B minus A, over the pairs
    bootstrap: Interval | None
    p_value: float
    verdict: str
    trials_needed: int | None  # approximate paired trials in all (None: no observed difference)
    trials_needed_per_case: int | None
    improved: list[CaseChange] = field(default_factory=list)
    regressed: list[CaseChange] = field(default_factory=list)


@dataclass(frozen=True)
class Comparison:
    """The whole comparison: how the trials paired up, and one `ScoreComparison` per score plus `all_scores`."""

    trials_a: int
    trials_b: int
    paired: int
    paired_cases: int
    unpaired_a: int
    unpaired_b: int
    resamples: int
    seed: int
    scores: dict[str, ScoreComparison]


def verdicts_of(scores: Mapping[str, Score], outcome: str) -> dict[str, bool | None]:
    """Pass/fail per score (None: could not be scored, or an infra_error trial), plus the overall
    verdict: every computable score passes."""
    verdicts: dict[str, bool | None] = {}
    for name, score in scores.items():
        value = None if outcome == "infra_error" else score.score
        verdicts[name] = None if value is None else value >= PASS_THRESHOLD
    computed = [verdict for verdict in verdicts.values() if verdict is not None]
    verdicts[OVERALL] = all(computed) if computed else None
    return verdicts


def score_record(record: TrialRecord, case: Case, names: Sequence[str]) -> dict[str, bool | None]:
    """Re-score one record with the named deterministic scorers and reduce the scores to verdicts."""
    return verdicts_of({name: SCORERS[name](record, case) for name in names}, record.outcome)


def _index(records: Iterable[TrialRecord], label: str) -> dict[tuple[str, int], TrialRecord]:
    """Trials by (case_id, trial_index); a duplicate would make the pairing ambiguous, so it is an error."""
    indexed: dict[tuple[str, int], TrialRecord] = {}
    for record in records:
        key = (record.case_id, record.trial_index)
        if key in indexed:
            raise CompareError(
                f"{label}: case '{record.case_id}' trial {record.trial_index} appears twice "
                "(several models or variants in one group? choose one with --model-a/--model-b)"
            )
        indexed[key] = record
    return indexed


def _group_stat(per_case: Mapping[str, list[bool]]) -> GroupStat:
    """Pass rate, Wilson interval and pass^k (k up to the fewest trials of a case) from per-case verdicts."""
    counts = [(sum(results), len(results)) for results in per_case.values() if results]
    passed, trials = sum(c for c, _ in counts), sum(n for _, n in counts)
    ks = range(1, min((n for _, n in counts), default=0) + 1)
    return GroupStat(passed, trials, wilson_interval(passed, trials), {k: pass_hat_k(counts, k) for k in ks})


def _verdict(b: int, c: int, p_value: float) -> str:
    if p_value >= ALPHA:  # b == c gives p = 1
        return SAME
    return BETTER if c > b else WORSE


def _compare_score(
    name: str,
    keys: Sequence[tuple[str, int]],
    verdicts_a: Mapping[tuple[str, int], dict[str, bool | None]],
    verdicts_b: Mapping[tuple[str, int], dict[str, bool | None]],
    resamples: int,
    seed: int,
) -> ScoreComparison:
    """One score: keep the pairs both sides could score, then count, test and bootstrap them."""
    pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    unscorable_a = unscorable_b = dropped = 0
    for key in keys:
        a, b = verdicts_a[key][name], verdicts_b[key][name]
        unscorable_a += a is None
        unscorable_b += b is None
        if a is None or b is None:
            dropped += 1
        else:
            pairs[key[0]].append((a, b))
    flat = [pair for case_pairs in pairs.values() for pair in case_pairs]
    a_pass_b_fail = sum(a and not b for a, b in flat)
    a_fail_b_pass = sum(b and not a for a, b in flat)
    p_value = mcnemar_exact(a_pass_b_fail, a_fail_b_pass)
    needed = trials_needed(a_pass_b_fail, a_fail_b_pass, len(flat))
    changes = [
        CaseChange(case_id, sum(a for a, _ in case_pairs), sum(b for _, b in case_pairs), len(case_pairs))
        for case_id, case_pairs in sorted(pairs.items())
    ]
    return ScoreComparison(
        name=name,
        pairs=len(flat),
        dropped=dropped,
        unscorable_a=unscorable_a,
        unscorable_b=unscorable_b,
        a=_group_stat({case_id: [a for a, _ in ps] for case_id, ps in pairs.items()}),
        b=_group_stat({case_id: [b for _, b in ps] for case_id, ps in pairs.items()}),
        a_pass_b_fail=a_pass_b_fail,
        a_fail_b_pass=a_fail_b_pass,
        difference=(a_fail_b_pass - a_pass_b_fail) / len(flat) if flat else None,
        bootstrap=paired_bootstrap(list(pairs.values()), resamples, seed),
        p_value=p_value,
        verdict=_verdict(a_pass_b_fail, a_fail_b_pass, p_value),
        trials_needed=needed,
        trials_needed_per_case=None if needed is None else max(1, math.ceil(needed / len(pairs))),
        improved=[change for change in changes if change.b_passed > change.a_passed],
        regressed=[change for change in changes if change.b_passed < change.a_passed],
    )


def compare(
    records_a: Sequence[TrialRecord],
    records_b: Sequence[TrialRecord],
    cases: Mapping[str, Case] | Iterable[Case],
    scores: Sequence[str] = tuple(SCORERS),
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Re-score both groups and compare them pair by pair, per score and overall (`all_scores`)."""
    by_id = dict(cases) if isinstance(cases, Mapping) else {case.id: case for case in cases}
    unknown = [name for name in scores if name not in SCORERS]
    if unknown:
        raise CompareError(f"unknown score {', '.join(unknown)} (known: {', '.join(SCORERS)})")
    for label, records in (("A", records_a), ("B", records_b)):
        missing = sorted({record.case_id for record in records} - set(by_id))
        if missing:
            shown = ", ".join(repr(case_id) for case_id in missing[:5]) + (" …" if len(missing) > 5 else "")
            raise CompareError(
                f"{label}: {len(missing)} case(s) not in the dataset: {shown} (point --dataset at the run's cases)"
            )
    indexed_a, indexed_b = _index(records_a, "A"), _index(records_b, "B")
    keys = sorted(set(indexed_a) & set(indexed_b))
    if not keys:
        raise CompareError("no trial of A pairs with a trial of B: they share no (case_id, trial_index)")
    verdicts_a = {key: score_record(indexed_a[key], by_id[key[0]], scores) for key in keys}
    verdicts_b = {key: score_record(indexed_b[key], by_id[key[0]], scores) for key in keys}
    return Comparison(
        trials_a=len(indexed_a),
        trials_b=len(indexed_b),
        paired=len(keys),
        paired_cases=len({case_id for case_id, _ in keys}),
        unpaired_a=len(indexed_a) - len(keys),
        unpaired_b=len(indexed_b) - len(keys),
        resamples=resamples,
        seed=seed,
        scores={
            name: _compare_score(name, keys, verdicts_a, verdicts_b, resamples, seed) for name in [*scores, OVERALL]
        },
    )


# -- input -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One side of the comparison: the run it came from and the trials chosen from it."""

    path: Path
    model: str
    variants: list[str]
    records: list[TrialRecord]

    @property
    def label(self) -> str:
        return f"{self.path} (model {self.model}, descriptions {', '.join(self.variants)}, {len(self.records)} trials)"


def resolve_run(argument: str) -> Path:
    """A run folder or trials.jsonl, or a run id under EVAL_RESULTS_DIR (default `results/`)."""
    path = Path(argument)
    if path.exists():
        return path
    under_results = Path(os.environ.get("EVAL_RESULTS_DIR") or "results") / argument
    if under_results.exists():
        return under_results
    raise CompareError(f"{argument}: no such run folder or {TRIALS_FILE} (nor {under_results})")


def load_records(argument: str) -> tuple[Path, dict[str, Any], list[TrialRecord]]:
    """A run's path, run.json and records; a missing, unreadable or empty run is a `CompareError`."""
    path = resolve_run(argument)
    try:
        info, records = load_run(path)
    except (OSError, ValueError) as error:
        raise CompareError(f"{path}: cannot read the run: {error}") from error
    if not records:
        trials = path if path.is_file() else path / TRIALS_FILE
        raise CompareError(f"{path}: the run has no trials ({trials} is missing or empty)")
    return path, info, records


def load_group(argument: str, model: str | None, side: str) -> Group:
    """The trials of one run, restricted to one model (required when the run holds several)."""
    path, _, records = load_records(argument)
    models = sorted({record.config.model for record in records})
    if model is None:
        if len(models) > 1:
            raise CompareError(f"{path}: the run holds several models ({', '.join(models)}): choose one with --{side}")
        model = models[0]
    chosen = [record for record in records if record.config.model == model]
    if not chosen:
        raise CompareError(f"{path}: no trials of model '{model}' (the run has {', '.join(models)})")
    variants = sorted({record.config.description_variant for record in chosen})
    return Group(path, model, variants, chosen)


# -- output ----------------------------------------------------------------------------------------


def _percent(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:+.1f}%" if signed else f"{100 * value:.1f}%"


def _interval(interval: Interval | None, signed: bool = False) -> str:
    if interval is None:
        return ""
    return f"[{_percent(interval.low, signed)}, {_percent(interval.high, signed)}]"


def _changes(title: str, changes: list[CaseChange], width: int = 118) -> list[str]:
    """A wrapped paragraph listing the cases whose pass count moved, as `case a/n→b/n` (never split)."""
    if not changes:
        return []
    items = [f"{c.case_id} {c.a_passed}/{c.trials}→{c.b_passed}/{c.trials}" for c in changes]
    lines = [f"    {title} ({len(changes)}):"]
    for position, item in enumerate(items):
        text = item + ("," if position < len(items) - 1 else "")
        if len(lines[-1]) + 1 + len(text) > width:
            lines.append("     ")
        lines[-1] += " " + text
    return lines


def _p(value: float) -> str:
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def explain(score: ScoreComparison) -> str:
    """The verdict with its evidence: the discordant counts and the exact p-value."""
    return (
        f"{score.verdict} (p = {score.p_value:.4g}; discordant pairs: {score.a_pass_b_fail} A-pass/B-fail, "
        f"{score.a_fail_b_pass} A-fail/B-pass)"
    )


def render(comparison: Comparison, group_a: Group, group_b: Group) -> str:
    """A plain-text report: one table row per score, then pass^k, verdicts and per-case changes."""
    c = comparison
    lines = [
        f"A: {group_a.label}",
        f"B: {group_b.label}",
        f"paired {c.paired} trials by (case_id, trial_index) over {c.paired_cases} cases; "
        f"unpaired: {c.unpaired_a} of {c.trials_a} in A, {c.unpaired_b} of {c.trials_b} in B",
        "",
        f"{'score':<25} {'pairs':>5} {'A pass':>7} {'A 95% CI':>16} {'B pass':>7} {'B 95% CI':>16} "
        f"{'B−A':>8} {'bootstrap 95% CI':>19} {'b/c':>5} {'p':>7}  verdict",
    ]
    for s in c.scores.values():
        lines.append(
            f"{s.name:<25} {s.pairs:>5} {_percent(s.a.rate):>7} {_interval(s.a.interval):>16} "
            f"{_percent(s.b.rate):>7} {_interval(s.b.interval):>16} {_percent(s.difference, True):>8} "
            f"{_interval(s.bootstrap, True):>19} {f'{s.a_pass_b_fail}/{s.a_fail_b_pass}':>5} {_p(s.p_value):>7}  "
            f"{s.verdict}"
        )
    lines += ["", "pass^k (k = 1..fewest paired trials of a case)"]
    for s in c.scores.values():
        a, b = (" ".join(_percent(v) for v in stat.pass_hat.values()) or "n/a" for stat in (s.a, s.b))
        lines.append(f"  {s.name:<25} A: {a:<30} B: {b}")
    lines += [
        "",
        f"trials needed per case to detect the observed difference (approximate: normal approximation, "
        f"McNemar, alpha {ALPHA}, 80% power)",
    ]
    for s in c.scores.values():
        needed = "—" if s.trials_needed is None else f"{s.trials_needed_per_case} ({s.trials_needed} pairs in all)"
        lines.append(f"  {s.name:<25} {needed}")
    lines += [
        "",
        f"verdicts (exact McNemar, alpha {ALPHA}; bootstrap over cases, {c.resamples} resamples, seed {c.seed})",
    ]
    for s in c.scores.values():
        lines.append(f"  {s.name}: {explain(s)}")
        if s.dropped:
            lines.append(
                f"    unscorable: {s.dropped} pairs dropped ({s.unscorable_a} trials in A, {s.unscorable_b} in B)"
            )
        lines += _changes("improved", s.improved) + _changes("regressed", s.regressed)
    return "\n".join(lines)


def as_json(comparison: Comparison, group_a: Group, group_b: Group) -> dict[str, Any]:
    """The same numbers as `render`, as one JSON-ready object."""

    def group(g: Group) -> dict[str, Any]:
        return {"run": str(g.path), "model": g.model, "variants": g.variants, "trials": len(g.records)}

    data = asdict(comparison)
    for name, score in data["scores"].items():
        score["a"]["rate"] = comparison.scores[name].a.rate
        score["b"]["rate"] = comparison.scores[name].b.rate
    return {"a": group(group_a), "b": group(group_b), "alpha": ALPHA, **data}


# -- command line ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.compare",
        description="Compare two runs (or two models of runs) pair by pair: exact McNemar test, bootstrap over cases.",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="run folder, its trials.jsonl, or a run id under results/")
    parser.add_argument("run_b", metavar="RUN_B", help="the run compared with A (may be the same run, another model)")
    parser.add_argument("--model-a", help="the model of run A to compare (required when the run holds several)")
    parser.add_argument("--model-b", help="the model of run B to compare")
    parser.add_argument(
        "--score", nargs="+", action="extend", choices=sorted(SCORERS), metavar="NAME", help="scores (default: all)"
    )
    parser.add_argument("--dataset", help="case file or folder (default: EVAL_DATASET, then the bundled cases)")
    parser.add_argument("--bootstrap", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    if args.bootstrap < 1:
        parser.error("--bootstrap must be at least 1")
    try:
        group_a = load_group(args.run_a, args.model_a, "model-a")
        group_b = load_group(args.run_b, args.model_b, "model-b")
        cases = load_cases(args.dataset)
        comparison = compare(
            group_a.records,
            group_b.records,
            cases,
            list(dict.fromkeys(args.score or SCORERS)),
            resamples=args.bootstrap,
            seed=args.seed,
        )
    except (CompareError, DatasetError) as error:
        print(f"compare: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(as_json(comparison, group_a, group_b), sort_keys=True))
    else:
        print(render(comparison, group_a, group_b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
