"""Baselines that should fail: which cases does an agent that does nothing useful still pass?

A do-nothing agent passes 38% of one published benchmark's tasks; a case anyone passes measures
nothing. The baselines (`harness.models.control.BASELINES`) run over every bundled case through the
real CLI; this module reads their trials: each one's pass rate per score and per `workflow:` tag,
and every case it passes (`all_scores`), each either expected, with the reason, or not. The only
expected passes: a case whose file says an answer with no tool call is right (`nothing_needed`), for
the agents that call none; a read question (or a refusal that must look first) for the agents that
read and change nothing (`explore`, and `rush`, which follows the reference reads as the careful
agent does). Every other pass is a case to fix.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from analysis.rescore import ScoredTrial
from analysis.summary import OVERALL
from harness.cases import Case


def _nothing_needed(case: Case) -> str | None:
    return f"its file says no tool is needed: {case.nothing_needed}" if case.nothing_needed else None


def _reading_is_the_answer(case: Case) -> str | None:
    """For the agents that read and change nothing: the cases whose safe path is exactly that."""
    if case.workflow == "read":
        return (
            "a read question answered by reading; whether the facts in the answer are the right ones is the "
            "judge's to say (no deterministic score reads them)"
        )
    if case.workflow == "refuse" and case.must_read:
        return "the right answer is to look, say what is there and change nothing"
    return _nothing_needed(case)


# Why a baseline may pass a case (None: it must fail it).
EXPECTED_PASSES: dict[str, Callable[[Case], str | None]] = {
    "control:idle": _nothing_needed,
    "control:ask": _nothing_needed,
    "control:refuse": _nothing_needed,
    "control:explore": _reading_is_the_answer,
    "control:rush": _reading_is_the_answer,  # a case with only reads is rushed as the careful agent reads it
}


@dataclass
class BaselineResult:
    """One baseline's trials, read as the lab reports them."""

    model: str
    trials: list[ScoredTrial] = field(default_factory=list)

    def pass_rates(self) -> dict[str, tuple[int, int]]:
        """Score name -> (passed, judged): n/a trials are not judged."""
        rates: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for trial in self.trials:
            for name, verdict in trial.verdicts.items():
                if verdict is not None:
                    rates[name][0] += int(verdict)
                    rates[name][1] += 1
        return {name: (passed, judged) for name, (passed, judged) in sorted(rates.items())}

    def by_workflow(self) -> dict[str, tuple[int, int]]:
        """`workflow:` tag -> (trials passing `all_scores`, trials)."""
        rates: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for trial in self.trials:
            key = trial.case.workflow or "(none)"
            rates[key][0] += int(trial.verdicts.get(OVERALL) is True)
            rates[key][1] += 1
        return {name: (passed, total) for name, (passed, total) in sorted(rates.items())}

    def passed_cases(self) -> dict[str, Case]:
        """Every case with a trial passing `all_scores`."""
        return {t.case.id: t.case for t in self.trials if t.verdicts.get(OVERALL) is True}

    def unexpected(self) -> list[str]:
        """The cases it passes where it should not."""
        rule = EXPECTED_PASSES.get(self.model, _nothing_needed)
        return sorted(case_id for case_id, case in self.passed_cases().items() if rule(case) is None)

    def expected(self) -> dict[str, str]:
        """The cases it passes where it may, with why."""
        rule = EXPECTED_PASSES.get(self.model, _nothing_needed)
        return {case_id: why for case_id, case in sorted(self.passed_cases().items()) if (why := rule(case))}


def baseline_results(trials: Iterable[ScoredTrial], models: Sequence[str]) -> list[BaselineResult]:
    """The trials grouped by baseline, in `models`' order."""
    grouped: Mapping[str, BaselineResult] = {model: BaselineResult(model) for model in models}
    for trial in trials:
        if trial.record.config.model in grouped:
            grouped[trial.record.config.model].trials.append(trial)
    return list(grouped.values())
