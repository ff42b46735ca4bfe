"""Which cases train the proposer, which choose among candidates, and which confirm the finalist.

Why a seeded hash and strata: the split must be the same on every machine and every re-run (a
case's rank depends on its id and the seed, never on the order of a file), and every `workflow:` tag
must reach all three parts where it has cases enough, or a rewrite could win on validation by
trading away a workflow validation never sees. Adding a case to a tag can move that tag's other
cases (the shares are dealt exactly); a run names its seed and its parts, so it stays reproducible.
Within a tag, cases are ranked by their hash and dealt out in the target shares, so a tag of n
cases gives each part its share rounded, the confirmation part first (it is the one no choice may
touch), then validation, the rest to train.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.cases import Case

PARTS = ("train", "validation", "confirmation")
DEFAULT_SHARES: Mapping[str, float] = {"train": 0.5, "validation": 0.25, "confirmation": 0.25}
UNTAGGED = "(no workflow tag)"


@dataclass(frozen=True)
class Splits:
    """Case ids per part, and how they were drawn (written into the run, so it can be reproduced)."""

    seed: str
    train: tuple[str, ...]
    validation: tuple[str, ...]
    confirmation: tuple[str, ...]

    def part_of(self, case_id: str) -> str:
        for part in PARTS:
            if case_id in getattr(self, part):
                return part
        raise KeyError(f"case {case_id!r} is in no part of this split")

    def describe(self) -> dict[str, object]:
        return {"seed": self.seed, **{part: list(getattr(self, part)) for part in PARTS}}


def case_hash(seed: str, case_id: str) -> str:
    """The case's place in the draw: sha256 of the seed and the id, nothing else."""
    return hashlib.sha256(f"{seed}\0{case_id}".encode()).hexdigest()


def _counts(size: int, shares: Mapping[str, float]) -> dict[str, int]:
    """How many of `size` cases each part gets: confirmation and validation their rounded shares (at
    least one each once the stratum has three cases), train the rest."""
    confirmation = round(size * shares["confirmation"])
    validation = round(size * shares["validation"])
    if size >= 3:
        confirmation, validation = max(1, confirmation), max(1, validation)
    confirmation = min(confirmation, size)
    validation = min(validation, size - confirmation)
    return {"confirmation": confirmation, "validation": validation, "train": size - confirmation - validation}


def split_cases(cases: Iterable[Case], seed: str, shares: Mapping[str, float] = DEFAULT_SHARES) -> Splits:
    """Train / validation / confirmation, stratified by the `workflow:` tag, fixed by `seed`."""
    if set(shares) != set(PARTS) or any(share < 0 for share in shares.values()) or abs(sum(shares.values()) - 1) > 1e-9:
        raise ValueError(f"shares must give {', '.join(PARTS)} non-negative parts summing to 1, got {dict(shares)}")
    strata: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"case id {case.id!r} appears twice: a split needs each case once")
        seen.add(case.id)
        strata[case.workflow or UNTAGGED].append(case.id)
    parts: dict[str, list[str]] = {part: [] for part in PARTS}
    for tag in sorted(strata):
        ranked = sorted(strata[tag], key=lambda case_id: case_hash(seed, case_id))
        counts = _counts(len(ranked), shares)
        start = 0
        for part in ("confirmation", "validation", "train"):
            parts[part] += ranked[start : start + counts[part]]
            start += counts[part]
    return Splits(seed, *(tuple(sorted(parts[part])) for part in PARTS))
