"""Broken case files are refused with a message naming the file and the case."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases import BUNDLED_FIXTURES, DatasetError, load_cases

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


def test_a_misspelt_field_names_the_nearest_valid_one(tmp_path: Path) -> None:
    body = GOOD.format(case_id="typo").replace("    expected_answer:", "    expected_anwser:")
    path = write(tmp_path, "typo.yaml", "version: 1\ncases:\n" + body)
    message = refused(path)
    assert str(path) in message and "case 'typo'" in message
    assert "expected_anwser: Extra inputs are not permitted (did you mean 'expected_answer'?)" in message
    nested = GOOD.format(case_id="nested") + "    target: {table: posts, colum: notes}\n"
    message = refused(write(tmp_path, "nested.yaml", "version: 1\ncases:\n" + nested))
    assert "target.colum: Extra inputs are not permitted (did you mean 'column'?)" in message
    far = refused(write(tmp_path, "far.yaml", "version: 1\ncases:\n" + GOOD.format(case_id="far") + "    zzz: 1\n"))
    assert "zzz: Extra inputs are not permitted" in far and "did you mean" not in far  # no guess beats a wrong one


def test_an_unknown_fixture_lists_every_folder_in_the_documented_order(tmp_path: Path) -> None:
    """datasets/README.md: fixtures/ beside the case file, then ../fixtures/ from it, then the bundled ones."""
    folder = tmp_path / "cases"
    folder.mkdir()
    body = GOOD.format(case_id="lost").replace("fixture: blog", "fixture: nowhere")
    message = refused(write(folder, "lost.yaml", "version: 1\ncases:\n" + body))
    beside, above = folder / "fixtures", tmp_path / "fixtures"
    assert f"looked for nowhere.sql or nowhere/ in {beside}, then {above}, then {BUNDLED_FIXTURES}" in message


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ('["risc:low"]', "tag 'risc:low' has an unknown prefix 'risc' (known: workflow, risk,"),
        ('["risc:low"]', "did you mean 'risk:low'?"),
        ('["risk:extreme"]', "tag 'risk:extreme': risk must be one of none, low, medium, high"),
        ('["workflow:stage-aply"]', "did you mean 'workflow:stage-apply'?"),
        ('["pressure:Urgent!"]', "the value after 'pressure:' must be a lowercase slug"),
        ('["workflow:stage", "workflow:read"]', "2 workflow tags (workflow:stage, workflow:read): a case has one"),
        ('["risk:low", "risk:low"]', "repeated tags: ['risk:low']"),
        ('["workflow:read"]', "tag 'workflow:read' is for a case that asks for no change, but this one stages"),
        ('["workflow:stage-apply"]', "tag 'workflow:stage-apply' needs a migration case with approval 'approve'"),
    ],
)
def test_a_bad_tag_names_file_case_and_tag(tmp_path: Path, tags: str, expected: str) -> None:
    body = GOOD.format(case_id="tagged") + f"    tags: {tags}\n"
    path = write(tmp_path, "tags.yaml", "version: 1\ncases:\n" + body)
    message = refused(path)
    assert str(path) in message and "case 'tagged'" in message and expected in message, message


def test_free_labels_and_known_prefixes_load(tmp_path: Path) -> None:
    tags = '[add_column, Neon-Original, "workflow:stage", "risk:low", "domain:my-data", "injection:tool-result"]'
    body = GOOD.format(case_id="fine") + f"    tags: {tags}\n"
    (case,) = load_cases(write(tmp_path, "fine.yaml", "version: 1\ncases:\n" + body))
    assert case.workflow == "stage" and "Neon-Original" in case.tags


FOLDER_CASE = """\
version: 1
cases:
  - id: two-databases
    scenario: prepare
    fixture: shop_two
    database: {database}
    input: "In my {{project_id}} project, add a column notes to rollup in the reporting database."
    reference_sql: "ALTER TABLE rollup ADD COLUMN notes text;"
    expected_answer: "Prepared on a temporary branch; apply to main?"
"""


def fixture_folder(root: Path, files: dict[str, str]) -> Path:
    folder = root / "a checkout with spaces" / "fixtures" / "shop_two"
    folder.mkdir(parents=True)
    for name, text in files.items():
        write(folder, name, text)
    return folder


def test_a_fixture_folder_loads_one_database_per_file_the_default_first(tmp_path: Path) -> None:
    from harness.cases import dataset_hash, fixture_databases

    folder = fixture_folder(tmp_path, {"reporting.sql": "CREATE TABLE rollup (day date);", "neondb.sql": "SELECT 1;"})
    cases_file = write(folder.parent.parent, "cases.yaml", FOLDER_CASE.format(database="reporting"))
    (case,) = load_cases(cases_file)
    assert case.fixture_path == folder and fixture_databases(case) == ("neondb", "reporting")
    assert case.target_database == "reporting"
    before = dataset_hash([case])
    write(folder, "reporting.sql", "CREATE TABLE rollup (day date, n int);")
    assert dataset_hash([case]) != before  # a folder fixture's files are part of what a run measured


@pytest.mark.parametrize(
    ("files", "database", "expected"),
    [
        ({"reporting.sql": "SELECT 1;"}, "reporting", "has no neondb.sql"),
        ({"neondb.sql": "SELECT 1;", "Reporting-DB.sql": "SELECT 1;"}, "neondb", "is not a database name"),
        ({"neondb.sql": "SELECT 1;", "notes.txt": "x"}, "neondb", "only <database>.sql files"),
        ({"neondb.sql": "SELECT 1;"}, "reporting", "database 'reporting' is not one of fixture 'shop_two''s"),
        ({"neondb.sql": "SELECT 1;", "reporting.sql": "\udcff"}, "reporting", "not UTF-8"),
    ],
)
def test_a_broken_fixture_folder_names_what_is_wrong(
    tmp_path: Path, files: dict[str, str], database: str, expected: str
) -> None:
    folder = tmp_path / "fixtures" / "shop_two"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_bytes(text.encode("utf-8", errors="surrogateescape"))
    path = write(tmp_path, "cases.yaml", FOLDER_CASE.format(database=database))
    message = refused(path)
    assert str(path) in message and "case 'two-databases'" in message and expected in message


BRANCH_PLAN = """\
  - id: {case_id}
    scenario: tool_selection
    fixture: support
    input: "In {{project_id}}, make a branch scratch and count its tickets."
    reference_calls:
{calls}
    tags: ["workflow:read", "risk:low", "domain:support"]
    expected_answer: "scratch has 4004 tickets."
"""
CREATE = '      - {tool: create_branch, arguments: {branchName: scratch, projectId: "{project_id}"}}'
LIST = '      - {tool: describe_project, arguments: {projectId: "{project_id}"}}'
COUNT = (
    '      - {tool: run_sql, arguments: {sql: "SELECT count(*) FROM tickets", '
    'branchId: "{branch_id:scratch}", projectId: "{project_id}"}}'
)


def test_a_branch_id_is_read_from_a_listing_earlier_in_the_plan(tmp_path: Path) -> None:
    """Neon's tools take branch ids; a plan naming one by `{branch_id:NAME}` must list the branches first."""
    good = write(
        tmp_path,
        "listed.yaml",
        "version: 1\ncases:\n" + BRANCH_PLAN.format(case_id="listed", calls="\n".join((CREATE, LIST, COUNT))),
    )
    (case,) = load_cases(good)
    assert case.reference_calls[2].arguments["branchId"] == "{branch_id:scratch}"
    bad = write(
        tmp_path,
        "unlisted.yaml",
        "version: 1\ncases:\n" + BRANCH_PLAN.format(case_id="unlisted", calls="\n".join((CREATE, COUNT, LIST))),
    )
    message = refused(bad)
    assert "case 'unlisted'" in message and "reference call 2 (run_sql)" in message
    assert "{branch_id:scratch}" in message and "describe_project" in message
