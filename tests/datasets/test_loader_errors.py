"""Broken case files are refused with a message naming the file and the case."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases import DatasetError, load_cases

GOOD = """\
  - id: {case_id}
    scenario: prepare
    fixture: blog
    input: "In my {{project_id}} project, add a column notes to posts."
    reference_sql: "ALTER TABLE posts ADD COLUMN notes text;"
    expected_answer: "Prepared on a temporary branch; apply to main?"
"""


def write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path


def refused(source: Path) -> str:
    with pytest.raises(DatasetError) as caught:
        load_cases(source)
    return str(caught.value)


def test_a_good_file_loads(tmp_path: Path) -> None:
    path = write(tmp_path, "good.yaml", "version: 1\ncases:\n" + GOOD.format(case_id="ok-case"))
    assert [case.id for case in load_cases(path)] == ["ok-case"]


def test_bad_yaml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.yaml", "version: 1\ncases:\n  - id: [unclosed\n")
    message = refused(path)
    assert str(path) in message and "YAML" in message


@pytest.mark.parametrize(
    ("problem", "edit", "expected"),
    [
        ("missing-field", lambda text: text.replace('    expected_answer: "Prepared', "    #"), "expected_answer"),
        ("unknown-field", lambda text: text + "    colour: blue\n", "colour"),
        ("bad-sql", lambda text: text.replace("ALTER TABLE posts ADD", "ALTR TABEL posts AD"), "does not parse"),
        ("missing-fixture", lambda text: text.replace("fixture: blog", "fixture: nowhere"), "nowhere"),
        ("missing-placeholder", lambda text: text.replace("{project_id}", "my-project"), "{project_id}"),
    ],
)
def test_broken_case_names_file_and_case(tmp_path: Path, problem: str, edit: object, expected: str) -> None:
    assert callable(edit)
    body = edit(GOOD.format(case_id=problem))
    path = write(tmp_path, f"{problem}.yaml", "version: 1\ncases:\n" + body)
    message = refused(path)
    assert str(path) in message and f"case '{problem}'" in message and expected in message


def test_duplicate_id_across_files_names_both(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", "version: 1\ncases:\n" + GOOD.format(case_id="twice"))
    second = write(tmp_path, "b.yaml", "version: 1\ncases:\n" + GOOD.format(case_id="twice"))
    message = refused(tmp_path)
    assert str(first) in message and str(second) in message and "case 'twice'" in message and "duplicate" in message
