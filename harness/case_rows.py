"""A case as a Braintrust dataset row, and back: the row is checked as a case file's entry is.

Why a row holds the whole case: Braintrust's playground and its dataset editor hand the task a row
(`input`, `expected`, `metadata`), not a case id this process loaded, and a row a user added in the
UI has no YAML behind it. So a row is self-contained and editable where people edit rows:

    input     the case's first user message (`input`, with its {project_id} placeholder)
    expected  the answer the judge compares with (`expected_answer`)
    metadata  {"case_id": id, "scenario": ..., "fixture": ..., "content_hash": ...,
               "case": every other field the case sets (reference_sql, follow_ups, approval, ...)}

Each field is in one place only: a row whose metadata.case repeats one of the row's own is refused.

`content_hash` is `Case.content_hash()`: `python -m braintrust_run.dataset push` writes only rows whose hash
changed. Fixtures are found by name as for a case file in `EVAL_DATASET` (else the bundled ones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.cases import Case, DatasetError, validate_case
from harness.environment import host

# The case's fields a row holds outside metadata.case (once each), and those only a loader sets.
ROW_FIELDS = {"id", "input", "expected_answer", "scenario", "fixture"}
LOADER_FIELDS = {"fixture_path", "source_file"}


def case_row(case: Case) -> dict[str, Any]:
    """The dataset row of `case` (its id is the case id, stable across pushes)."""
    fields = case.model_dump(mode="json", exclude=ROW_FIELDS | LOADER_FIELDS, exclude_defaults=True)
    return {
        "id": case.id,
        "input": case.input,
        "expected": case.expected_answer,
        "metadata": {
            "case_id": case.id,
            "scenario": case.scenario,
            "fixture": case.fixture,
            "content_hash": case.content_hash(),
            "case": fields,
        },
    }


def rows_case_file() -> Path:
    """Where a row's fixture is looked for from: as if the row were one more case file of EVAL_DATASET."""
    root = host().dataset_path
    return root / "rows.yaml" if root.is_dir() else root


def case_from_row(input: object, expected: object, metadata: object, where: str) -> Case:
    """The case a row describes, validated like a case file's entry; DatasetError names the problem."""
    if not isinstance(metadata, dict) or not isinstance(metadata.get("case"), dict):
        raise DatasetError(
            f"{where}: metadata.case is missing: a row carries its case's fields (scenario, fixture, "
            "reference_sql, ...) under metadata.case, as `python -m braintrust_run.dataset push` writes them"
        )
    raw = dict(metadata["case"])
    for field in sorted(ROW_FIELDS & set(raw)):
        raise DatasetError(
            f"{where}: metadata.case.{field}: this field is the row's own ({_WHERE[field]}), not the case's"
        )
    raw.update(
        id=metadata.get("case_id"),
        scenario=metadata.get("scenario"),
        fixture=metadata.get("fixture"),
        input=input,
        expected_answer=expected,
    )
    missing = [f"metadata.{name}" for name in ("case_id", "scenario", "fixture") if not metadata.get(name)]
    if missing:
        raise DatasetError(f"{where}: {', '.join(missing)} missing: a row names its case, scenario and fixture there")
    return validate_case(raw, where, rows_case_file())


_WHERE = {
    "id": "metadata.case_id",
    "scenario": "metadata.scenario",
    "fixture": "metadata.fixture",
    "input": "the row's input",
    "expected_answer": "the row's expected",
}
