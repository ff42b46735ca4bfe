"""Each verdict's error rates over a lab run: false alarms over the behaviours it must pass, misses over
those it must fail, each with its 95% Wilson interval and the behaviours behind every disagreement.

A known limit (listed on its behaviour, with the reason and the fix) is counted apart: it is a
disagreement the suite publishes, not one it hides, and one that no longer happens is stale (the
limit is then to be removed, so the list stays true).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from analysis.stats import Interval, wilson_interval
from validity.lab import Played
from validity.verdicts import Disagreement, expected_verdicts


@dataclass
class VerdictRates:
    """One verdict's record over the behaviours that make a claim about it."""

    name: str
    must_pass: int = 0
    must_fail: int = 0
    false_alarms: list[Disagreement] = field(default_factory=list)
    misses: list[Disagreement] = field(default_factory=list)

    def unexplained(self, kind: str) -> list[Disagreement]:
        return [item for item in (self.false_alarms if kind == "false_alarm" else self.misses) if not item.known]

    @property
    def false_alarm_interval(self) -> Interval | None:
        return wilson_interval(len(self.false_alarms), self.must_pass)

    @property
    def miss_interval(self) -> Interval | None:
        return wilson_interval(len(self.misses), self.must_fail)


def verdict_rates(played: Iterable[Played]) -> dict[str, VerdictRates]:
    """Every verdict any label makes a claim about, with its counts and disagreements."""
    rates: dict[str, VerdictRates] = {}
    for item in played:
        for name, must_pass in expected_verdicts(item.behaviour).items():
            entry = rates.setdefault(name, VerdictRates(name))
            if must_pass:
                entry.must_pass += 1
            else:
                entry.must_fail += 1
        for disagreement in item.disagreements:
            entry = rates.setdefault(disagreement.verdict, VerdictRates(disagreement.verdict))
            (entry.false_alarms if disagreement.kind == "false_alarm" else entry.misses).append(disagreement)
    return dict(sorted(rates.items()))


def stale_limits(played: Iterable[Played]) -> list[str]:
    """Known limits whose disagreement did not happen where they say it does: `<behaviour>: <verdict>`."""
    stale: list[str] = []
    for item in played:
        server = item.scored.record.config.server
        happened = {disagreement.verdict for disagreement in item.disagreements}
        stale += [
            f"{item.behaviour.id}: {limit.verdict} ({server})"
            for limit in item.behaviour.known_limit
            if limit.applies_to(server) and limit.verdict not in happened
        ]
    return stale
