"""Prose that lists score names cannot go stale silently: every listing of them in the code's
docstrings and comments and in the documentation names scores the registry has, in its order, and
the listings that stand for the whole set are the whole set.

A listing is three or more score names (or names of the modules that declare them) in a row,
separated by commas or `·` (backticks allowed, across line breaks). One that ends with `...` is a
prefix of the registry's order. A listing meant as every score is in `COMPLETE`, by the words it
follows; a new one goes there too. Smaller listings (a table row of what failed, a sentence about
two scores) are only checked for the names and their order.
"""

from __future__ import annotations

import re
from pathlib import Path

from scorers.registry import DETERMINISTIC, SCORERS

ROOT = Path(__file__).resolve().parents[2]
NAMES = [spec.name for spec in SCORERS]
DETERMINISTIC_NAMES = [spec.name for spec in DETERMINISTIC]
MODULES = [spec.fn.__module__.rpartition(".")[2] for spec in SCORERS]  # integrity, data_integrity, ...
KNOWN = set(NAMES) | set(MODULES)
PACKAGES = ("harness", "scorers", "evals", "braintrust_run", "tuning", "analysis", "localmodel")
SOURCES = [
    *(path for package in PACKAGES for path in (ROOT / package).rglob("*.py")),
    *sorted((ROOT / "docs").rglob("*.md")),
    ROOT / "README.md",
    ROOT / "datasets" / "README.md",
]
# Listings meant as every score (or every deterministic one): the words right before each.
COMPLETE = {
    "docs/architecture.md": ["scorers/  "],
    "docs/statistics.md": ["re-scored offline with the deterministic scorers ("],
}
# A backticked or snake_case identifier, or a scorer module's one-word name (`trajectory`).
ONE_WORD = "|".join(sorted(re.escape(name) for name in KNOWN if "_" not in name))
ITEM = rf"`?(?:[a-z][a-z0-9]*_[a-z0-9_]+|{ONE_WORD})`?"
LISTING = re.compile(rf"(?<![\w`]){ITEM}(?:(?:, (?:and )?|,? and | · ){ITEM}){{2,}}(?P<more>,? ?(?:\.\.\.|…))?")


def flat(path: Path) -> str:
    """The file as one line per paragraph: line breaks, and the comment marks they carry, as spaces."""
    return re.sub(r"\s*\n\s*(?:#\s*)?", " ", path.read_text(encoding="utf-8"))


def listings(text: str) -> list[tuple[int, list[str], bool]]:
    """(offset, names, ends with ...) of each listing of at least two score names in `text`."""
    found = []
    for match in LISTING.finditer(text):
        items = [item.strip("`") for item in re.findall(ITEM, match.group(0))]
        if sum(item in KNOWN for item in items) >= 2:
            found.append((match.start(), items, bool(match.group("more"))))
    return found


def as_names(items: list[str]) -> list[str]:
    return [NAMES[MODULES.index(item)] if item in MODULES and item not in NAMES else item for item in items]


def problems(path: Path) -> list[str]:
    text, where = flat(path), str(path.relative_to(ROOT))
    found: list[str] = []
    for offset, items, more in listings(text):
        names = as_names(items)
        unknown = [item for item in items if item not in KNOWN]
        if unknown:
            found.append(f"{where}: {', '.join(items)}: not scores the registry has: {', '.join(unknown)}")
            continue
        if names != sorted(names, key=NAMES.index):
            found.append(f"{where}: {', '.join(items)}: not in the registry's order ({', '.join(NAMES)})")
        if more and names != NAMES[: len(names)]:
            found.append(f"{where}: {', '.join(items)} ...: not the first of {', '.join(NAMES)}")
        complete = any(text[:offset].endswith(words) for words in COMPLETE.get(where, []))
        if complete and names not in (NAMES, DETERMINISTIC_NAMES):
            found.append(f"{where}: {', '.join(items)}: meant as every score; the registry has {', '.join(NAMES)}")
    for words in COMPLETE.get(where, []):
        if not any(text[:offset].endswith(words) for offset, _, _ in listings(text)):
            found.append(f"{where}: no listing of scores after {words!r}")
    return found


def test_every_listing_of_score_names_matches_the_registry() -> None:
    assert [problem for path in SOURCES for problem in problems(path)] == []


def test_the_complete_listings_are_found() -> None:
    for where in COMPLETE:
        assert listings(flat(ROOT / where)), where


def test_a_stale_listing_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("Scores: `main_branch_integrity`, `data_integrity`, `tool_trajectory`, `old_score`.\n")
    assert listings(flat(page))[0][1][-1] == "old_score"
    stale = [items for _, items, _ in listings(flat(page)) if any(item not in KNOWN for item in items)]
    assert stale == [["main_branch_integrity", "data_integrity", "tool_trajectory", "old_score"]]
    page.write_text("# scores=...,  # data_integrity,\n# main_branch_integrity, tool_trajectory, ...\n")
    [(_, items, more)] = listings(flat(page))
    assert more and as_names(items) != NAMES[: len(items)]
