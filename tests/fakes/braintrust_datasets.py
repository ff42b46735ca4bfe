"""Braintrust datasets for the recording stand-in (`tests/fakes/braintrust_server.py`).

What braintrust 0.48.1 calls for a dataset (`logger.py`: `init_dataset`, `Dataset.insert`,
`.delete`, `Dataset._refetch`, `.version`; `api/_generated/*/datasets.py`): `POST /v1/dataset`
(create, or the existing one of that name in the project), `GET /v1/dataset/{id}`, `GET
/v1/dataset` (filtered by project and dataset name), rows through `POST /logs3` with a
`dataset_id` (a new `_xact_id` per write; `_object_delete` removes a row), and `POST
/v1/dataset/{id}/fetch`, optionally pinned to a `version` (each row as it was at that transaction).
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Datasets:
    """Every dataset and every version of every row (by dataset and row id, oldest first)."""

    datasets: list[dict[str, Any]] = field(default_factory=list)
    history: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    _xact: itertools.count[int] = field(default_factory=lambda: itertools.count(1000000000000000000))

    def create(self, body: dict[str, Any], created: str) -> tuple[int, dict[str, Any]]:
        for dataset in self.datasets:
            if dataset["project_id"] == body["project_id"] and dataset["name"] == body["name"]:
                return 200, dataset
        dataset = {
            "id": f"ds-{uuid.uuid4().hex[:12]}",
            "project_id": body["project_id"],
            "name": body["name"],
            "description": body.get("description"),
            "metadata": body.get("metadata"),
            "created": created,
        }
        self.datasets.append(dataset)
        return 200, dataset

    def get(self, dataset_id: str) -> dict[str, Any] | None:
        return next((item for item in self.datasets if item["id"] == dataset_id), None)

    def named(self, project_ids: set[str], name: str | None) -> list[dict[str, Any]]:
        found = [item for item in reversed(self.datasets) if item["project_id"] in project_ids]
        return [item for item in found if name is None or item["name"] == name]

    def write(self, row: dict[str, Any]) -> None:
        """One row of a `logs3` upload that names a dataset: a new version of that row."""
        versions = self.history.setdefault((str(row["dataset_id"]), str(row["id"])), [])
        written = {**row, "_xact_id": str(next(self._xact))}
        if row.get("_is_merge") and versions and not versions[-1].get("_object_delete"):
            written = {**versions[-1], **{k: v for k, v in written.items() if k != "_is_merge"}}
        versions.append(written)

    def rows(self, dataset_id: str, version: str | None = None) -> list[dict[str, Any]]:
        """The dataset's live rows, as of `version` (a transaction id) when given."""
        found = []
        for (owner, _), versions in self.history.items():
            if owner != dataset_id:
                continue
            seen = [item for item in versions if version is None or int(item["_xact_id"]) <= int(version)]
            if seen and not seen[-1].get("_object_delete"):
                found.append(dict(seen[-1]))
        return sorted(found, key=lambda item: str(item["id"]))

    def writes(self, dataset_id: str) -> int:
        """How many row versions were ever written to the dataset (a push of one change adds one)."""
        return sum(len(versions) for (owner, _), versions in self.history.items() if owner == dataset_id)

    def fetch(self, dataset_id: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """`POST /v1/dataset/{id}/fetch`: the rows (as of `version`), all in one page."""
        if self.get(dataset_id) is None:
            return 404, {"error": f"no dataset {dataset_id}"}
        return 200, {"events": self.rows(dataset_id, body.get("version")), "cursor": None}
