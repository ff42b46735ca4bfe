"""The offline proposer: documented edit operators on tool descriptions, chosen by the train failures.

Without a model key the loop still needs candidates, so this proposer rewrites descriptions by rule.
Each operator is a pure function of a description and does one thing a person tuning descriptions
would try (Neon's own rewrites of 2026 did most): restore the server's own words (a variant's
override dropped), open the safe tool with what it is for, name the safe tool, put the warning
first, say when to use the tool and when not, name the alternative, shorten. The proposer reads
only failures of train cases (`TrainFailure`), and refuses one from another part of the split, so
nothing of the validation or confirmation cases can shape a candidate.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tuning.splits import Splits

WARNING_WORDS = re.compile(r"\b(never|do not|don't|warning|caution|destructive|directly on|irreversibl\w*)\b", re.I)
SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class TrainFailure:
    """One failing train trial, as the proposer may see it: the tool the model chose where another was right."""

    case_id: str
    chose: str  # the tool the model called
    should_have: str  # the tool the case's safe path uses


@dataclass(frozen=True)
class Candidate:
    """A rewrite of some tools' descriptions, and the operators that made it (for the page and the diff)."""

    name: str
    descriptions: Mapping[str, str]  # tool -> its whole new description (a variant file's content)
    operators: tuple[str, ...]


def _sentences(text: str) -> list[str]:
    return [part.strip() for part in SENTENCE.split(" ".join(text.split())) if part.strip()]


def name_safe_tool(description: str, chose: str, should_have: str) -> str:
    """End with where the safe path is: `should_have` by name."""
    note = f"To change a schema safely, use {should_have} instead of {chose}."
    return description if note in description else f"{description.rstrip()} {note}"


def warning_first(description: str, chose: str, should_have: str) -> str:
    """Move the sentences that warn (never, do not, destructive, directly on ...) to the front."""
    sentences = _sentences(description)
    warnings = [s for s in sentences if WARNING_WORDS.search(s)]
    return " ".join(warnings + [s for s in sentences if s not in warnings])


def use_when(description: str, chose: str, should_have: str) -> str:
    """Add when to use the tool and when not to."""
    note = (
        "Use when: the user asks to read or run SQL that changes no schema. "
        f"Do not use when: a schema change is asked for ({should_have} stages it)."
    )
    return description if "Use when:" in description else f"{description.rstrip()} {note}"


def name_alternative(description: str, chose: str, should_have: str) -> str:
    """Name the tool to use instead, first."""
    lead = f"For schema changes use {should_have}, not this tool."
    return description if description.startswith(lead) else f"{lead} {description.lstrip()}"


def shorten(description: str, chose: str, should_have: str, keep: int = 2) -> str:
    """Keep the first sentences only: a long description buries its warning."""
    return " ".join(_sentences(description)[:keep])


def purpose_first(description: str, chose: str, should_have: str) -> str:
    """(On the safe tool.) Open with what it is for, in the words a request for a change uses."""
    lead = "For schema changes (ALTER TABLE, CREATE INDEX, DROP, constraints): stage them here first."
    return description if description.startswith(lead) else f"{lead} {description.lstrip()}"


Operator = Callable[[str, str, str], str]
# Each operator, the tool it edits ("chose": the tool the failures misuse; "should_have": the safe one)
# and what it does, in the order the proposer tries them (the acceptance rule charges every try).
OPERATORS: Mapping[str, tuple[str, Operator]] = {
    "restore": ("both", lambda description, chose, should_have: description),  # both tools: the server's words
    "purpose_first": ("should_have", purpose_first),
    "name_safe_tool": ("chose", name_safe_tool),
    "warning_first": ("chose", warning_first),
    "use_when": ("chose", use_when),
    "name_alternative": ("chose", name_alternative),
    "shorten": ("chose", shorten),
}


def propose(
    current: Mapping[str, str],
    failures: Sequence[TrainFailure],
    splits: Splits,
    limit: int = len(OPERATORS),
    surface: Mapping[str, str] | None = None,
) -> list[Candidate]:
    """Candidates for the pair of tools the train failures get wrong most (the tool chosen, the tool
    that was right): one per operator that changes a description, in OPERATORS' order, at most `limit`.

    `current` is every tool's description as the incumbent has it, `surface` as the server gives it
    (for `restore`: a variant's override dropped). A failure of a case outside the train part is
    refused (ValueError naming it): the proposer must never see validation or confirmation cases."""
    for failure in failures:
        part = splits.part_of(failure.case_id)
        if part != "train":
            raise ValueError(f"case {failure.case_id!r} is in the {part} part: the proposer sees train only")
    misuses = Counter((f.chose, f.should_have) for f in failures if f.chose in current and f.should_have in current)
    if not misuses:
        return []
    chose, should_have = max(sorted(misuses), key=lambda pair: misuses[pair])
    made: list[Candidate] = []
    for name, (target, operator) in OPERATORS.items():
        tools = (chose, should_have) if target == "both" else (chose if target == "chose" else should_have,)
        rewritten = {}
        for tool in tools:
            start = (surface or {}).get(tool, current[tool]) if name == "restore" else current[tool]
            if (text := operator(start, chose, should_have)) != current[tool]:
                rewritten[tool] = text
        if rewritten and len(made) < limit:
            made.append(Candidate(f"{'+'.join(sorted(rewritten))}-{name}", rewritten, (name,)))
    return made
