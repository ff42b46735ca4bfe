"""The one list of scorers: every module in `scorers/` that declares a `SPEC`, in `order`.

Readers use `SCORERS` (all), `DETERMINISTIC` (those a past run can be re-scored with offline and
get the same verdict) and `spec(name)`. Collected by import rather than written out, so adding a
scorer never means editing a list here, in the Eval wiring or in the analysis.

    python -m scorers.registry [--json] [--parts]

prints every scorer with its version (`scorers.versions`; `--parts`: what each version covers),
and the judge's template with its declared version and the digest of its bytes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from collections.abc import Callable, Mapping, Sequence

import scorers
from scorers.judge_template import TemplateError, load_template, template_path
from scorers.spec import ScorerSpec
from scorers.versions import file_digest, version_of

__all__ = ["DETERMINISTIC", "NAMES", "SCORERS", "ScorerSpec", "UnknownScorer", "spec"]
_NOT_SCORERS = ("registry", "spec", "adapters", "versions")


class UnknownScorer(KeyError):
    """A score name no module declares."""


def _collect() -> tuple[ScorerSpec, ...]:
    found: list[ScorerSpec] = []
    for module_info in pkgutil.iter_modules(scorers.__path__):
        if module_info.name.startswith("_") or module_info.name in _NOT_SCORERS:
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


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m scorers.registry", description="Every scorer and its version.")
    parser.add_argument("--json", action="store_true", help="one JSON object: {name: version}")
    parser.add_argument("--parts", action="store_true", help="also what each version covers (with --json: nested)")
    args = parser.parse_args(argv)
    found = [version_of(item) for item in SCORERS]
    if args.json:
        shown = {v.name: {"version": v.version, "parts": v.parts} if args.parts else v.version for v in found}
        out(json.dumps(shown, sort_keys=True))
        return 0
    for item in found:
        out(f"{item.name:<26} {item.version}")
        if args.parts:
            for key, value in item.parts.items():
                out(f"    {key}" + (f" {value}" if value else ""))
    out(template_line())
    return 0


def template_line(env: Mapping[str, str] | None = None) -> str:
    """The judge's template: its declared `name@version` and the digest of its bytes, which is what
    factuality's version covers (a prompt edited without a bump still moves it)."""
    path = template_path(env)
    try:
        declared = load_template(path).ref
    except TemplateError as error:
        declared = f"unreadable ({error})"
    return f"{'judge template':<26} {declared} bytes {file_digest(path)} ({path.name}; part of factuality's version)"


if __name__ == "__main__":
    sys.exit(main())
