"""The cases as Braintrust datasets: one per scenario, kept in step with the YAML, which stays the truth.

    python -m braintrust_run.dataset push [--dry-run]     (make dataset)

`push` writes each scenario's cases (`EVAL_DATASET`, or the bundled ones) into the dataset
`<scenario>-cases` of `EVAL_PROJECT`: one row per case, its id the case id, the case in the row
(`harness.case_rows`), and only rows whose content hash changed are written. A row a user added
in Braintrust's UI (no `pushed` mark) is kept; a row pushed earlier whose case left the YAML is
deleted. Keyed runs then record which version of the dataset they ran (`recorded_version`, in the
experiment's metadata as `braintrust_dataset`), or that the YAML has moved on since the last push.

Exit codes: 0 done (or nothing to write), 1 Braintrust refused a call, 2 no Braintrust login or a
bad case file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.case_rows import case_from_row, case_row
from harness.cases import Case, DatasetError, load_cases

PUSHED = "pushed"  # metadata mark of rows `push` wrote (rows without it were added in Braintrust)


def dataset_name(scenario: str) -> str:
    return f"{scenario}-cases"


@dataclass
class Pushed:
    """What one scenario's push did."""

    name: str
    cases: int
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # rows added in Braintrust, left alone
    version: str | None = None

    def line(self, dry_run: bool) -> str:
        verb = "would write" if dry_run else "written"
        parts = [f"{self.name}: {self.cases} cases, {len(self.written)} {verb}"]
        parts.append(f"{self.cases - len(self.written)} unchanged")
        if self.deleted:
            parts.append(f"{len(self.deleted)} {'would be ' if dry_run else ''}deleted ({', '.join(self.deleted)})")
        if self.kept:
            parts.append(f"{len(self.kept)} added in Braintrust kept ({', '.join(self.kept)})")
        if self.version is not None:
            parts.append(f"version {self.version}")
        return "; ".join(parts)


def _rows(dataset: Any) -> dict[str, dict[str, Any]]:
    return {str(row["id"]): dict(row) for row in dataset.fetch()}


def row_hash(row: dict[str, Any] | None) -> str | None:
    """The content hash of the case a stored row holds as it is now (an edit in the UI included;
    None: no row, or not a valid case), so a push rewrites what no longer matches the YAML."""
    if row is None:
        return None
    try:
        return case_from_row(
            row.get("input"), row.get("expected"), row.get("metadata"), f"row {row.get('id')}"
        ).content_hash()
    except DatasetError:
        return None


def push_scenario(project: str, scenario: str, cases: list[Case], dry_run: bool) -> Pushed:
    """Bring the dataset of `scenario` in step with `cases` (only changed rows written)."""
    from braintrust import init_dataset

    dataset = init_dataset(project=project, name=dataset_name(scenario))
    existing = _rows(dataset)
    done = Pushed(dataset_name(scenario), len(cases))
    wanted = {case.id for case in cases}
    for case in cases:
        row = case_row(case)
        if row_hash(existing.get(case.id)) == case.content_hash():
            continue
        done.written.append(case.id)
        if not dry_run:
            dataset.insert(
                id=row["id"], input=row["input"], expected=row["expected"], metadata={**row["metadata"], PUSHED: True}
            )
    for row_id, stored in sorted(existing.items()):
        if row_id in wanted:
            continue
        if (stored.get("metadata") or {}).get(PUSHED):
            done.deleted.append(row_id)
            if not dry_run:
                dataset.delete(row_id)
        else:
            done.kept.append(row_id)
    if not dry_run:
        dataset.flush()
        done.version = init_dataset(project=project, name=done.name).version  # a fresh fetch: after the writes
    return done


def push(project: str, cases: Iterable[Case], dry_run: bool = False) -> list[Pushed]:
    by_scenario: dict[str, list[Case]] = {}
    for case in cases:
        by_scenario.setdefault(case.scenario, []).append(case)
    return [push_scenario(project, scenario, found, dry_run) for scenario, found in sorted(by_scenario.items())]


def recorded_version(project: str, scenario: str, cases: list[Case]) -> dict[str, Any]:
    """Which pushed dataset a keyed run's cases are, for the experiment's metadata: its name, id and
    version, and whether the YAML still matches it (`in_step`, with the cases that differ)."""
    from braintrust import init_dataset
    from braintrust.api import BraintrustClient

    name = dataset_name(scenario)
    try:
        with BraintrustClient() as client:
            client.auth.login()
            listed = client.openapi.datasets.get_dataset(project_name=project, dataset_name=name, limit=1)
        found = list(listed.get("objects") or [])
        if not found:
            return {"name": name, "pushed": False, "note": "never pushed: `make dataset` makes it"}
        dataset = init_dataset(dataset_id=str(found[0]["id"]))
        rows = _rows(dataset)
        version = dataset.version
    except Exception as error:  # the dataset is a record of the run, not a reason to stop it
        return {"name": name, "note": f"could not be read: {type(error).__name__}: {error}"}
    differ = [case.id for case in cases if row_hash(rows.get(case.id)) != case.content_hash()]
    return {
        "name": name,
        "id": str(found[0]["id"]),
        "version": version,
        "in_step": not differ,
        **({"differs": differ[:20], "note": "the YAML changed since the last push: `make dataset`"} if differ else {}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m braintrust_run.dataset", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pushing = commands.add_parser("push", help="write each scenario's changed cases to its Braintrust dataset")
    pushing.add_argument("--dry-run", action="store_true", help="say what would be written, write nothing")
    args = parser.parse_args(argv)

    from braintrust_run.experiments import braintrust_project
    from braintrust_run.login import sending_logs, start_login

    start_login()
    if not sending_logs():
        print("dataset: no Braintrust login: set BRAINTRUST_API_KEY (in .env or the environment)", file=sys.stderr)
        return 2
    try:
        cases = load_cases()
    except DatasetError as error:
        print(f"dataset: {error}", file=sys.stderr)
        return 2
    project = braintrust_project()
    try:
        for done in push(project, cases, dry_run=args.dry_run):
            print(done.line(args.dry_run))
    except Exception as error:  # a refused call names itself; nothing else to undo (rows are upserts)
        print(f"dataset: Braintrust refused: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
