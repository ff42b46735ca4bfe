"""Sequential decisions: the error guarantee holds under optional stopping (seeded simulations),
where a fixed-sample interval peeked at after every trial does not; and the simulation's numbers."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest

from analysis import simulate
from analysis.sequential import (
    ABOVE,
    BELOW,
    FINE,
    IMPROVED,
    REGRESSED,
    PairCounts,
    decide_cutoff,
    decide_paired,
)
from analysis.stats import wilson_interval

ALPHA = 0.05
LOOKS = 150
SEQUENCES = 2000


@cache
def _cutoff(passed: int, trials: int) -> str | None:
    return decide_cutoff(passed, trials, 0.5, ALPHA)


@cache
def _paired(pairs: int, b: int, c: int, margin: float) -> str | None:
    return decide_paired(PairCounts(pairs, b, c), margin, ALPHA)


def _first(verdicts: list[str | None]) -> str | None:
    return next((v for v in verdicts if v is not None), None)


def test_a_case_just_under_the_cutoff_is_rarely_called_above_however_long_it_is_watched() -> None:
    rng = np.random.default_rng(11)
    outcomes = rng.random((SEQUENCES, LOOKS)) < 0.48
    passed = np.cumsum(outcomes, axis=1)
    wrong = peeking_wrong = 0
    for row in passed.tolist():
        verdicts = [_cutoff(s, n + 1) for n, s in enumerate(row)]
        wrong += _first(verdicts) == ABOVE
        # The same outcomes, judged by a 95% Wilson interval looked at after every trial.
        intervals = [wilson_interval(s, n + 1) for n, s in enumerate(row)]
        peeking_wrong += any(i is not None and i.low > 0.5 for i in intervals)
    assert wrong / SEQUENCES <= ALPHA
    # The check has teeth: repeated peeking at a fixed-sample interval breaks the same bound.
    assert peeking_wrong / SEQUENCES > ALPHA


def test_equal_arms_are_rarely_called_improved_or_regressed_under_optional_stopping() -> None:
    rng = np.random.default_rng(12)
    a = rng.random((SEQUENCES, 80)) < 0.5
    b = rng.random((SEQUENCES, 80)) < 0.5
    b_counts = np.cumsum(a & ~b, axis=1).tolist()
    c_counts = np.cumsum(b & ~a, axis=1).tolist()
    wrong = 0
    for bs, cs in zip(b_counts, c_counts, strict=True):
        verdict = _first([_paired(n + 1, x, y, 0.3) for n, (x, y) in enumerate(zip(bs, cs, strict=True))])
        wrong += verdict in (IMPROVED, REGRESSED)
    assert wrong / SEQUENCES <= ALPHA


def test_a_difference_of_the_margin_is_rarely_called_fine() -> None:
    rng = np.random.default_rng(13)
    a = np.ones((SEQUENCES, LOOKS), dtype=bool)
    b = rng.random((SEQUENCES, LOOKS)) < 0.7  # B is 30 points worse: exactly the margin
    b_counts = np.cumsum(a & ~b, axis=1).tolist()
    c_counts = np.cumsum(b & ~a, axis=1).tolist()
    verdicts = [
        _first([_paired(n + 1, x, y, 0.3) for n, (x, y) in enumerate(zip(bs, cs, strict=True))])
        for bs, cs in zip(b_counts, c_counts, strict=True)
    ]
    assert sum(v == FINE for v in verdicts) / SEQUENCES <= ALPHA
    assert verdicts.count(REGRESSED) > SEQUENCES / 2  # and the regression itself is found


def test_cases_that_never_vary_are_decided_early() -> None:
    assert decide_cutoff(6, 6) is None
    assert decide_cutoff(7, 7) == ABOVE
    assert decide_cutoff(0, 7) == BELOW
    assert decide_cutoff(4, 8) is None
    assert decide_paired(PairCounts(7, 0, 7)) == IMPROVED
    assert decide_paired(PairCounts(7, 7, 0)) == REGRESSED
    assert decide_paired(PairCounts(13, 0, 0)) == FINE
    assert decide_paired(PairCounts(12, 0, 0)) is None
    assert decide_paired(PairCounts(20, 3, 4)) is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: decide_cutoff(1, 2, cutoff=1.0), "cutoff"),
        (lambda: decide_cutoff(1, 2, alpha=0.0), "alpha"),
        (lambda: decide_paired(PairCounts(2, 2, 1)), "discordant"),
        (lambda: decide_cutoff(3, 2), "non-negative"),
    ],
)
def test_bad_input_is_named(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


def test_the_simulation_saves_trials_without_more_wrong_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    results = simulate.run(runs=150, cases=20, max_trials=20, seed=3)
    single, paired = results.values()
    adaptive, fixed, naive = single
    assert adaptive.saved >= 0.4
    assert adaptive.wrong <= fixed.wrong + 0.002 and adaptive.wrong <= ALPHA
    assert naive.wrong > adaptive.wrong  # the pass rate against the cutoff, read without an interval
    assert paired[0].saved > 0.2 and paired[0].wrong <= ALPHA
    assert simulate.main(["--runs", "20", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert next(iter(printed.values()))[0]["method"] == "adaptive"
    assert simulate.main(["--runs", "0"]) == 2
