"""What the suite needs to know about one scorer, declared next to the scorer itself.

Each scorer module ends with `SPEC = ScorerSpec(...)`; `scorers.registry` collects them, and the
Eval wiring, `analysis.compare`, `analysis.report` and the calibration read only the registry. So
adding a scorer is one module (function + SPEC) and its test, and no list elsewhere can go stale.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoevals import Score

from harness.cases import Case
from harness.recording.records import TrialRecord
from scorers._common import as_run
from scorers.versions import stamp, version_of

SyncScorer = Callable[[TrialRecord, Case], Score]
AsyncScorer = Callable[[TrialRecord, Case], Awaitable[Score]]
Explainer = Callable[[Mapping[str, Any]], list[str]]
# The data files a scorer reads under the given settings (None: the process's); their bytes are part
# of its version (`scorers.versions`).
DataFiles = Callable[[Mapping[str, str] | None], tuple[Path, ...]]


def no_data(env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """A scorer that reads no file: its code alone is its version."""
    return ()


def listed(*keys: str) -> Explainer:
    """An explainer that lists the items stored under `keys` in a score's metadata, in that order."""

    def explain(metadata: Mapping[str, Any]) -> list[str]:
        lines: list[str] = []
        for key in keys:
            value = metadata.get(key)
            if isinstance(value, (list, tuple)):
                lines.extend(str(item) for item in value)
            elif value:
                lines.append(str(value))
        return lines

    return explain


@dataclass(frozen=True)
class ScorerSpec:
    """One scorer: its score name, the function, whether re-running it gives the same verdict, and
    how to turn a failing score's metadata into lines a person reads (a line may hold a block, e.g.
    a diff, with newlines in it). `order` places it in tables and in Braintrust's scorer list.
    `reads` names the data files its verdict depends on (a template); its version covers them."""

    name: str
    fn: SyncScorer | AsyncScorer
    deterministic: bool
    explain: Explainer
    order: int
    summary: str  # one line: what a pass means
    reads: DataFiles = no_data

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    def version(self, env: Mapping[str, str] | None = None) -> str:
        """This scorer's version: a hash of its code and the data it reads (`scorers.versions`)."""
        return version_of(self, env).version

    def score(self, record: TrialRecord, case: Case) -> Score:
        """Run a synchronous scorer (every deterministic scorer is one): a pure function of the record,
        and of the case as the record's server family ran it (`scorers._common.as_run`). The score's
        metadata names the scorer's version (`scorer_version`)."""
        if self.is_async:
            raise TypeError(f"scorer {self.name} is asynchronous: await spec.ascore(record, case) instead")
        result = self.fn(record, as_run(record, case))
        assert isinstance(result, Score)
        return stamp(result, self.version())

    async def ascore(self, record: TrialRecord, case: Case) -> Score:
        """Run any scorer, synchronous or not, the same way; the score names the scorer's version."""
        result = self.fn(record, as_run(record, case))
        awaited = await result if inspect.isawaitable(result) else result
        assert isinstance(awaited, Score)
        return stamp(awaited, self.version())
