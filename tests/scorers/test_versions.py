"""Scorer versions (`scorers/versions.py`): derived from the code and data, they move when that does.

Each test edits a copy of the package in a temporary folder (never the checkout) and reads the
versions of the copy through a `Locator` rooted there: a scorer whose code changed must get a new
version, the others must keep theirs; edits that change no code (comments, docstrings) change no
version. The scorers are taken from the registry, so a scorer module added later is covered by the
parametrised tests without an edit here.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from scorers import adapters
from scorers.judge_template import BUNDLED_TEMPLATE, load_template
from scorers.registry import DETERMINISTIC, SCORERS, spec, template_line
from scorers.registry import main as registry_main
from scorers.spec import ScorerSpec
from scorers.versions import (
    METADATA_KEY,
    Locator,
    VersionError,
    changed_parts,
    code_version,
    file_digest,
    reached,
    version_of,
)
from tests.scorers.conftest import case, record

REPO_ROOT = Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def _copy(tmp_path: Path, *packages: str) -> Path:
    for package in packages:
        shutil.copytree(REPO_ROOT / package, tmp_path / package, ignore=SKIP)
    return tmp_path


def _versions(locator: Locator | None = None) -> dict[str, str]:
    return {item.name: code_version(item.fn.__module__, locator).version for item in SCORERS}


def _insert_statement(path: Path, function: str, line: str = "_unused = None") -> None:
    """Add one line of code as the first statement of `function` (after its docstring) in `path`."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    [node] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function]
    anchor = node.body[0]
    indent = " " * anchor.col_offset
    lines = source.splitlines(keepends=True)
    end = anchor.end_lineno or anchor.lineno
    lines.insert(end, f"{indent}{line}\n")
    path.write_text("".join(lines), encoding="utf-8")


def _module_path(root: Path, module: str) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def _depends_on(name: str, module: str, definition: str) -> bool:
    """Whether scorer `name`'s version covers `definition` of `module` (read from the checkout)."""
    return definition in reached(spec(name).fn.__module__).get(module, [])


def test_a_copy_elsewhere_has_the_same_versions(tmp_path: Path) -> None:
    """A version is of the code, not of where the checkout is."""
    copy = _copy(tmp_path, "scorers", "harness")
    assert _versions(Locator((copy,))) == _versions()
    assert all(len(version) == 12 for version in _versions().values())
    assert len(set(_versions().values())) == len(SCORERS)  # every scorer's code differs from every other's


@pytest.mark.parametrize("name", [item.name for item in SCORERS])
def test_changing_one_line_of_a_scorer_changes_its_version_and_no_other(tmp_path: Path, name: str) -> None:
    changed = spec(name)
    copy = _copy(tmp_path, "scorers")
    _insert_statement(_module_path(copy, changed.fn.__module__), changed.fn.__name__)
    before, after = _versions(), _versions(Locator((copy,)))
    assert after[name] != before[name]
    others = {n for n in before if n != name and changed.fn.__module__ not in reached(spec(n).fn.__module__)}
    assert {n: after[n] for n in others} == {n: before[n] for n in others}


def test_a_helper_changes_only_the_scorers_that_reach_it(tmp_path: Path) -> None:
    """`scorers/_common.py` is shared; a function in it that some scorers call moves those scorers alone."""
    module = "scorers._common"
    tree = ast.parse((REPO_ROOT / "scorers" / "_common.py").read_text(encoding="utf-8"))
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    users = {f: {item.name for item in SCORERS if _depends_on(item.name, module, f)} for f in functions}
    some = sorted((len(r), f) for f, r in users.items() if 0 < len(r) < len(SCORERS))
    assert some, f"no helper in {module} is used by some scorers but not all: {users}"
    helper = some[0][1]
    readers = users[helper]
    copy = _copy(tmp_path, "scorers")
    _insert_statement(copy / "scorers" / "_common.py", helper)
    before, after = _versions(), _versions(Locator((copy,)))
    assert {n for n in before if before[n] != after[n]} == readers


def test_comments_docstrings_and_blank_lines_change_no_version(tmp_path: Path) -> None:
    copy = _copy(tmp_path, "scorers")
    for item in SCORERS:
        path = _module_path(copy, item.fn.__module__)
        text = path.read_text(encoding="utf-8")
        text = text.replace('"""', '"""A reworded docstring. ', 1)  # the module's docstring
        path.write_text(text + "\n\n# a comment at the end\n", encoding="utf-8")
        _insert_statement(path, item.fn.__name__, "# a comment inside the scorer")
    assert _versions(Locator((copy,))) == _versions()


def test_the_harness_code_a_scorer_reads_is_in_its_version_and_the_rest_is_not(tmp_path: Path) -> None:
    """`harness/servers/registry.py`: `roles_for` (which tools do what) decides verdicts; `family_for`
    (which family runs a trial) and the sandbox machinery behind it do not."""
    module = "harness.servers.registry"
    readers = {item.name for item in SCORERS if _depends_on(item.name, module, "roles_for")}
    assert readers and not any(_depends_on(item.name, module, "family_for") for item in SCORERS)
    unrelated = _copy(tmp_path / "unrelated", "scorers", "harness")
    _insert_statement(unrelated / "harness" / "servers" / "registry.py", "family_for")
    assert _versions(Locator((unrelated,))) == _versions()
    related = _copy(tmp_path / "related", "scorers", "harness")
    _insert_statement(related / "harness" / "servers" / "registry.py", "roles_for")
    before, after = _versions(), _versions(Locator((related,)))
    assert {n for n in before if before[n] != after[n]} == readers


def test_the_judges_template_is_part_of_factualitys_version(tmp_path: Path) -> None:
    """A changed prompt or choice score is a new factuality version even when nobody bumped `version`."""
    template = yaml.safe_load(BUNDLED_TEMPLATE.read_text(encoding="utf-8"))
    template["choice_scores"]["A"] = 0.5  # one number, same declared version
    edited = tmp_path / "factuality.yaml"
    edited.write_text(yaml.safe_dump(template), encoding="utf-8")
    bundled = {item.name: item.version({}) for item in SCORERS}
    chosen = {item.name: item.version({"EVAL_JUDGE_TEMPLATE": str(edited)}) for item in SCORERS}
    assert {n for n in bundled if bundled[n] != chosen[n]} == {"factuality"}
    assert version_of(spec("factuality"), {}).parts[f"data:{BUNDLED_TEMPLATE.name}"] != "unreadable"
    copy = tmp_path / "same.yaml"
    shutil.copy(BUNDLED_TEMPLATE, copy)
    assert spec("factuality").version({"EVAL_JUDGE_TEMPLATE": str(copy)}) == bundled["factuality"]  # bytes, not path


def test_the_templates_line_names_its_declared_version_and_its_bytes(tmp_path: Path) -> None:
    """`python -m scorers.registry` lists the judge's template too: an edit without a bump shows."""
    bundled = template_line({})
    assert bundled.split()[2:5] == [
        "factuality@" + str(load_template().version),
        "bytes",
        file_digest(BUNDLED_TEMPLATE),
    ]
    edited = tmp_path / "factuality.yaml"
    edited.write_text(BUNDLED_TEMPLATE.read_text(encoding="utf-8").replace("choice_scores", "choice_scores", 1) + "\n")
    line = template_line({"EVAL_JUDGE_TEMPLATE": str(edited)})
    assert line.split()[2] == bundled.split()[2] and line.split()[4] != bundled.split()[4]  # same bump, new bytes
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\n", encoding="utf-8")
    assert "unreadable (judge template" in template_line({"EVAL_JUDGE_TEMPLATE": str(broken)})
    lines: list[str] = []
    assert registry_main([], lines.append) == 0
    assert lines[-1] == template_line() and len(lines) == len(SCORERS) + 1  # the process's template


def test_every_data_file_in_scorers_is_read_by_some_scorer() -> None:
    """A data file no scorer declares (`ScorerSpec.reads`) would change verdicts without a new version."""
    declared = {path.resolve() for item in SCORERS for path in item.reads({})}
    data = {
        path.resolve()
        for path in (REPO_ROOT / "scorers").rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    }
    assert data <= declared, f"data files no scorer's `reads` names: {sorted(map(str, data - declared))}"


def test_the_distributions_a_scorer_imports_are_parts_of_its_version() -> None:
    import importlib.metadata

    parts = version_of(spec("tool_trajectory")).parts
    assert f"pglast=={importlib.metadata.version('pglast')}" in parts  # its SQL parser
    assert not any(key.startswith("pglast==") for key in version_of(spec("data_integrity")).parts)
    assert changed_parts({"a": "1", "pglast==8.7": ""}, {"a": "2", "pglast==8.8": ""}) == [
        "a (changed)",
        "pglast==8.7 -> pglast==8.8",
    ]


def test_a_scorer_module_added_to_the_package_is_versioned_with_no_other_edit(tmp_path: Path) -> None:
    """What another engineer's new scorer gets: drop a module with a `SPEC` into a copy of `scorers/`,
    run `python -m scorers.registry` from there, and it has a version; nobody else's moved."""
    copy = _copy(tmp_path, "scorers")
    (copy / "scorers" / "answer_length.py").write_text(
        textwrap.dedent(
            '''
            """A scorer added by someone else: the final answer is not empty."""

            from autoevals import Score

            from harness.cases import Case
            from harness.recording.records import TrialRecord
            from scorers.spec import ScorerSpec, listed


            def answer_length(record: TrialRecord, case: Case) -> Score:
                return Score(name="answer_length", score=1.0 if record.final_answer.strip() else 0.0)


            SPEC = ScorerSpec("answer_length", answer_length, True, listed("reason"), 60, "the agent answered")
            '''
        ),
        encoding="utf-8",
    )
    completed = subprocess.run(
        [sys.executable, "-m", "scorers.registry", "--json"],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    found = json.loads(completed.stdout)
    assert set(found) == {item.name for item in SCORERS} | {"answer_length"}
    assert {name: found[name] for name in _versions()} == {item.name: item.version() for item in SCORERS}


def test_an_unreadable_module_is_a_clear_error(tmp_path: Path) -> None:
    copy = _copy(tmp_path, "scorers")
    (copy / "scorers" / "broken.py").write_text("def broken(:\n", encoding="utf-8")
    with pytest.raises(VersionError, match=r"module scorers\.broken .*broken\.py.*cannot be read"):
        code_version("scorers.broken", Locator((copy,)))
    with pytest.raises(VersionError, match=r"scorers\.nowhere: no source file"):
        code_version("scorers.nowhere", Locator((copy,)))


# --- every score names the version that made it -----------------------------------------------------


def test_scores_name_their_scorers_version_however_they_are_run() -> None:
    trial, bundled = record("read-count-posts"), case("read-count-posts")
    for item in DETERMINISTIC:
        assert (item.score(trial, bundled).metadata or {})[METADATA_KEY] == item.version()
    metadata = {"trial": trial.model_dump(mode="json"), "case": bundled.model_dump(mode="json")}
    via_adapter = adapters.by_name("tool_trajectory")(metadata=metadata)
    assert via_adapter.metadata[METADATA_KEY] == spec("tool_trajectory").version()
    judged = asyncio.run(adapters.by_name("factuality")(metadata=metadata))  # no judge here: n/a, still named
    assert judged.score is None and judged.metadata[METADATA_KEY] == spec("factuality").version()
    lost = adapters.by_name("data_integrity")(metadata={"trial_key": "gone#0:x"})
    assert lost.score is None and lost.metadata[METADATA_KEY] == spec("data_integrity").version()


def test_a_spec_without_data_is_its_code_version() -> None:
    item = spec("main_branch_integrity")
    assert isinstance(item, ScorerSpec) and item.reads({}) == ()
    assert item.version() == code_version(item.fn.__module__).version


def test_a_module_imported_by_a_literal_name_is_followed(tmp_path: Path) -> None:
    copy = _copy(tmp_path, "scorers")
    (copy / "scorers" / "dynamic.py").write_text(
        'import importlib\n\n\ndef diff():\n    return importlib.import_module("scorers.dumps").capped_diff\n',
        encoding="utf-8",
    )
    assert "scorers.dumps" in code_version("scorers.dynamic", Locator((copy,))).parts
