"""The one list of scorers: every module in `scorers/` that declares a `SPEC`, in `order`.

Readers use `SCORERS` (all), `DETERMINISTIC` (those a past run can be re-scored with offline and
get the same verdict) and `spec(name)`. Collected by import rather than written out, so adding a
scorer never means editing a list here, in the Eval wiring or in the analysis.
"""

from __future__ import annotations

import importlib
import pkgutil

import scorers
from scorers.spec import ScorerSpec

__all__ = ["DETERMINISTIC", "NAMES", "SCORERS", "ScorerSpec", "UnknownScorer", "spec"]


class UnknownScorer(KeyError):
    """A score name no module declares."""


def _collect() -> tuple[ScorerSpec, ...]:
    found: list[ScorerSpec] = []
    for module_info in pkgutil.iter_modules(scorers.__path__):
        if module_info.name.startswith("_") or module_info.name in ("registry", "spec", "adapters"):
            continue
        declared = getattr(importlib.import_module(f"scorers.{module_info.name}"), "SPEC", None)
        if isinstance(declared, ScorerSpec):
            found.append(declared)
    names = [item.name for item in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise RuntimeError(f"scorers: score name(s) declared twice: {', '.join(duplicates)}")
    return tuple(sorted(found, key=lambda item: (item.order, item.name)))


SCORERS: tuple[ScorerSpec, ...] = _collect()
DETERMINISTIC: tuple[ScorerSpec, ...] = tuple(item for item in SCORERS if item.deterministic)
NAMES: tuple[str, ...] = tuple(item.name for item in SCORERS)


def spec(name: str) -> ScorerSpec:
    """The scorer declared under `name`; an unknown name is an error listing the known ones."""
    for item in SCORERS:
        if item.name == name:
            return item
    raise UnknownScorer(f"unknown score {name!r} (known: {', '.join(NAMES)})")
