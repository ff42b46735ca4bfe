"""Proof by simulation: adaptive trials against a fixed 20, on cases whose pass probabilities are known.

    python -m analysis.simulate [--runs 2000] [--max 20] [--seed 0] [--alpha 0.05] [--cutoff 0.5]
                                [--margin 0.3] [--json]

Each simulated run draws a suite of cases from a mix like real eval results (most cases pass or fail
almost always, some are noisy, in A/B a few move), draws every trial's outcome once, and lets each
method decide from the same outcomes, so the methods differ only in how they decide. A verdict is
wrong when it contradicts the known probabilities: "above"/"below" on the wrong side of the cutoff;
"improved" when B is not better, "regressed" when B is not worse, "fine" when the pass rates differ by
`margin` or more. "undecided" is not a verdict: it is counted apart (and never as a pass).

Methods:
- adaptive: `analysis.sequential`, looked at after every trial, stopping at the first verdict or at max;
- fixed-20 tests: all `max` trials, then the same questions with fixed-sample tests (Wilson 95%
  interval against the cutoff; exact McNemar at 0.05 for direction, the one-sided 97.5% Clopper-Pearson
  bound of the discordance rate under `margin` for "fine");
- fixed-20 as read today: the pass rate against the cutoff; McNemar's verdict with "no significant
  difference" read as fine (what `analysis.compare` prints).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from functools import cache

import numpy as np

from analysis.sequential import (
    ABOVE,
    BELOW,
    DEFAULT_ALPHA,
    DEFAULT_CUTOFF,
    DEFAULT_MARGIN,
    FINE,
    IMPROVED,
    REGRESSED,
    PairCounts,
    decide_cutoff,
    decide_paired,
)
from analysis.stats import mcnemar_exact, wilson_interval

UNDECIDED = "undecided"
# Verdict codes in the arrays: 0 undecided, then one code per verdict.
CUTOFF_CODES = {UNDECIDED: 0, ABOVE: 1, BELOW: 2}
PAIRED_CODES = {UNDECIDED: 0, IMPROVED: 1, REGRESSED: 2, FINE: 3}

# (probability, weight): most cases are all but deterministic; some are noisy.
SINGLE_MIX: tuple[tuple[float, float], ...] = (
    (1.0, 0.30),
    (0.97, 0.15),
    (0.9, 0.10),
    (0.0, 0.15),
    (0.03, 0.05),
    (0.75, 0.10),
    (0.3, 0.10),
    (0.55, 0.05),
)
# ((p_A, p_B), weight): in an A/B most cases do not move; a few move a lot, some a little.
PAIRED_MIX: tuple[tuple[tuple[float, float], float], ...] = (
    ((1.0, 1.0), 0.30),
    ((0.97, 0.97), 0.15),
    ((0.0, 0.0), 0.10),
    ((0.9, 0.85), 0.10),
    ((1.0, 0.1), 0.10),
    ((0.1, 0.95), 0.05),
    ((0.95, 0.5), 0.10),
    ((0.6, 0.6), 0.10),
)


@dataclass(frozen=True)
class MethodResult:
    """How one method did over every simulated case of one scenario."""

    method: str
    cases: int
    mean_trials: float
    saved: float  # share of the fixed design's trials not spent
    wrong: float  # wrong verdicts / cases
    undecided: float  # no verdict / cases


@cache
def cutoff_table(max_trials: int, cutoff: float, alpha: float) -> np.ndarray:
    """Adaptive verdict code for (trials, passed): each state is decided once, then looked up."""
    table = np.zeros((max_trials + 1, max_trials + 1), dtype=np.int8)
    for n in range(1, max_trials + 1):
        for s in range(n + 1):
            table[n, s] = CUTOFF_CODES[decide_cutoff(s, n, cutoff, alpha) or UNDECIDED]
    return table


@cache
def paired_table(max_trials: int, margin: float, alpha: float) -> np.ndarray:
    """Adaptive verdict code for (pairs, b, c)."""
    table = np.zeros((max_trials + 1,) * 3, dtype=np.int8)
    for n in range(1, max_trials + 1):
        for b in range(n + 1):
            for c in range(n + 1 - b):
                table[n, b, c] = PAIRED_CODES[decide_paired(PairCounts(n, b, c), margin, alpha) or UNDECIDED]
    return table


def first_verdict(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of look-by-look codes (shape [..., looks]): the first non-zero code and trials spent."""
    decided = codes != 0
    any_decided = decided.any(axis=-1)
    first = np.where(any_decided, decided.argmax(axis=-1), codes.shape[-1] - 1)
    verdict = np.take_along_axis(codes, first[..., None], axis=-1)[..., 0]
    return verdict, first + 1


def fixed_cutoff_verdict(passed: int, trials: int, cutoff: float, *, naive: bool) -> int:
    if naive:
        return CUTOFF_CODES[ABOVE if passed / trials >= cutoff else BELOW]
    interval = wilson_interval(passed, trials)
    assert interval is not None
    if interval.low > cutoff:
        return CUTOFF_CODES[ABOVE]
    if interval.high < cutoff:
        return CUTOFF_CODES[BELOW]
    return CUTOFF_CODES[UNDECIDED]


def fixed_paired_verdict(n: int, b: int, c: int, margin: float, *, naive: bool) -> int:
    if mcnemar_exact(b, c) < 0.05:
        return PAIRED_CODES[IMPROVED if c > b else REGRESSED]
    if naive:
        return PAIRED_CODES[FINE]
    from scipy.stats import beta  # here, not at import: scipy.stats costs 2 s, and the tests' collection imports this

    upper = 1.0 if b + c == n else float(beta.ppf(0.975, b + c + 1, n - b - c))
    return PAIRED_CODES[FINE if upper < margin else UNDECIDED]


def _result(method: str, verdicts: np.ndarray, trials: np.ndarray, wrong: np.ndarray, max_trials: int) -> MethodResult:
    mean_trials = float(trials.mean())
    return MethodResult(
        method=method,
        cases=int(verdicts.size),
        mean_trials=round(mean_trials, 2),
        saved=round(1.0 - mean_trials / max_trials, 3),
        wrong=round(float(wrong.mean()), 4),
        undecided=round(float((verdicts == 0).mean()), 4),
    )


def simulate_cutoff(
    probabilities: np.ndarray, max_trials: int, cutoff: float, alpha: float, rng: np.random.Generator
) -> list[MethodResult]:
    """One-run question per case: is the pass rate above or below `cutoff`?"""
    outcomes = rng.random((probabilities.size, max_trials)) < probabilities[:, None]
    passed = np.cumsum(outcomes, axis=1)
    looks = np.arange(1, max_trials + 1)
    codes = cutoff_table(max_trials, cutoff, alpha)[looks[None, :], passed]
    adaptive, spent = first_verdict(codes)

    def wrong(verdicts: np.ndarray) -> np.ndarray:
        return ((verdicts == CUTOFF_CODES[ABOVE]) & (probabilities < cutoff)) | (
            (verdicts == CUTOFF_CODES[BELOW]) & (probabilities >= cutoff)
        )

    total = passed[:, -1]
    results = [_result("adaptive", adaptive, spent, wrong(adaptive), max_trials)]
    full = np.full(probabilities.size, max_trials)
    for label, naive in ((f"fixed-{max_trials} tests", False), (f"fixed-{max_trials} as read today", True)):
        verdicts = np.array([fixed_cutoff_verdict(int(s), max_trials, cutoff, naive=naive) for s in total])
        results.append(_result(label, verdicts, full, wrong(verdicts), max_trials))
    return results


def simulate_paired(
    arms: np.ndarray, max_trials: int, margin: float, alpha: float, rng: np.random.Generator
) -> list[MethodResult]:
    """A/B question per case (arms: shape [cases, 2] of p_A, p_B): improved, regressed, or fine?"""
    a = rng.random((arms.shape[0], max_trials)) < arms[:, :1]
    b = rng.random((arms.shape[0], max_trials)) < arms[:, 1:]
    b_counts = np.cumsum(a & ~b, axis=1)  # A passed, B failed
    c_counts = np.cumsum(b & ~a, axis=1)
    looks = np.arange(1, max_trials + 1)
    codes = paired_table(max_trials, margin, alpha)[looks[None, :], b_counts, c_counts]
    adaptive, spent = first_verdict(codes)
    delta = arms[:, 1] - arms[:, 0]

    def wrong(verdicts: np.ndarray) -> np.ndarray:
        return (
            ((verdicts == PAIRED_CODES[IMPROVED]) & (delta <= 0))
            | ((verdicts == PAIRED_CODES[REGRESSED]) & (delta >= 0))
            | ((verdicts == PAIRED_CODES[FINE]) & (np.abs(delta) >= margin))
        )

    results = [_result("adaptive", adaptive, spent, wrong(adaptive), max_trials)]
    full = np.full(arms.shape[0], max_trials)
    final = zip(b_counts[:, -1].tolist(), c_counts[:, -1].tolist(), strict=True)
    pairs = list(final)
    for label, naive in ((f"fixed-{max_trials} tests", False), (f"fixed-{max_trials} as read today", True)):
        verdicts = np.array([fixed_paired_verdict(max_trials, bb, cc, margin, naive=naive) for bb, cc in pairs])
        results.append(_result(label, verdicts, full, wrong(verdicts), max_trials))
    return results


def draw_mix(mix: tuple[tuple[object, float], ...], size: int, rng: np.random.Generator) -> np.ndarray:
    values = np.array([value for value, _ in mix], dtype=float)
    weights = np.array([weight for _, weight in mix], dtype=float)
    return values[rng.choice(len(mix), size=size, p=weights / weights.sum())]


def run(
    runs: int = 2000,
    cases: int = 20,
    max_trials: int = 20,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
    cutoff: float = DEFAULT_CUTOFF,
    margin: float = DEFAULT_MARGIN,
) -> dict[str, list[MethodResult]]:
    """Both scenarios over `runs` simulated suites of `cases` cases each, seeded."""
    if runs < 1 or cases < 1 or max_trials < 1:
        raise ValueError("runs, cases and max trials must each be at least 1")
    rng = np.random.default_rng(seed)
    size = runs * cases
    return {
        f"one run: pass rate above or below {cutoff:.0%}": simulate_cutoff(
            draw_mix(SINGLE_MIX, size, rng), max_trials, cutoff, alpha, rng
        ),
        f"A/B: improved, regressed, or within {margin:.0%}": simulate_paired(
            draw_mix(PAIRED_MIX, size, rng), max_trials, margin, alpha, rng
        ),
    }


def format_results(results: dict[str, list[MethodResult]]) -> str:
    lines: list[str] = []
    for scenario, rows in results.items():
        lines.append(f"== {scenario} ({rows[0].cases} simulated cases)")
        lines.append(f"   {'method':<26} {'trials/case':>11} {'saved':>7} {'wrong':>7} {'undecided':>10}")
        for row in rows:
            numbers = f"{row.mean_trials:>11.2f} {row.saved:>7.1%} {row.wrong:>7.2%} {row.undecided:>10.1%}"
            lines.append(f"   {row.method:<26} {numbers}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.simulate", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="simulated suites (default 2000)")
    parser.add_argument("--cases", type=int, default=20, help="cases per suite (default 20)")
    parser.add_argument("--max", type=int, default=20, dest="max_trials", help="trials per case at most (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA)
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF)
    parser.add_argument("--margin", type=float, default=DEFAULT_MARGIN)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    try:
        results = run(args.runs, args.cases, args.max_trials, args.seed, args.alpha, args.cutoff, args.margin)
    except ValueError as error:
        print(f"analysis.simulate: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({k: [asdict(r) for r in v] for k, v in results.items()}, indent=2))
    else:
        print(format_results(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
