"""Every score has its one docs entry, and the list of scores in the docs is generated, not written.

docs/scores.md holds the table of every score (`<!-- sample:scores -->`, made from the registry by
`analysis.samples.registry_samples`) and, under it, one bullet per score saying what it checks. Other
pages link to the table instead of listing the scores, so adding a scorer is its module, its test
and its bullet.
"""

from __future__ import annotations

import re
from pathlib import Path

from analysis.samples import registry_samples, stale_samples
from scorers.registry import NAMES

ROOT = Path(__file__).resolve().parents[2]
SCORES_PAGE = ROOT / "docs" / "scores.md"
ENTRY = re.compile(r"^- `(?P<name>[a-z_]+)`: ", re.M)  # a bullet that opens with a score's name


def entries(text: str) -> list[str]:
    """The score names the bullets of the page's "The scores" section open with, in order."""
    section = text.split("\n## The scores\n", 1)[-1].split("\n## ", 1)[0]
    return ENTRY.findall(section)


def entry_problems(text: str, names: tuple[str, ...]) -> list[str]:
    found = entries(text)
    problems = [f"no bullet for the score {name}" for name in names if name not in found]
    problems += [f"a bullet for {name}, a score the registry lacks" for name in found if name not in names]
    problems += [f"{name} has {found.count(name)} bullets" for name in sorted(set(found)) if found.count(name) > 1]
    return problems


def test_the_table_of_scores_is_the_registrys() -> None:
    assert stale_samples(registry_samples(), [SCORES_PAGE]) == [], "run python -m analysis.samples"


def test_every_score_has_its_one_entry() -> None:
    assert entry_problems(SCORES_PAGE.read_text(encoding="utf-8"), NAMES) == []


def test_a_missing_or_stray_entry_is_named() -> None:
    page = "## The scores\n\n- `a_score`: checks a.\n- `old_score`: gone.\n- `a_score`: again.\n\n## Next\n- `b`: x\n"
    assert entry_problems(page, ("a_score", "new_score")) == [
        "no bullet for the score new_score",
        "a bullet for old_score, a score the registry lacks",
        "a_score has 2 bullets",
    ]
