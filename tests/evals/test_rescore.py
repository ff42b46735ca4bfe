"""Scores that carry their version, end to end: a run through the real `braintrust eval` CLI (logged
to the recording Braintrust stand-in over real HTTP), then re-scored, reported and compared by the real
commands, once with the repository's scorers and once with "today's": a copy of `scorers/` in which
`tool_trajectory` got a stricter rule (appended to its module, as a change to the scorer would be).
The run is made once for the module; the checkout is never edited.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from analysis import compare, report, rescore
from analysis.stored_scores import PARTS_KEY, SCORES_FILE, VERSIONS_KEY, load_scores, trial_key
from harness.recording.store import load_run
from scorers.registry import DETERMINISTIC, SCORERS
from scorers.versions import Locator, code_version
from tests.analysis.html_tree import Node, parse
from tests.evals.cli import (
    COUNT_POSTS_CASE,
    DATASET_HEAD,
    REPO_ROOT,
    offline_env,
    python_module,
    run_braintrust_eval,
    subtitle_case,
)
from tests.fakes.braintrust_server import FakeBraintrust

RUN_ID = "stored-run"
CASES = ["add-column-subtitle", "read-count-posts"]
STRICTER_REASON = "today's stricter rule: no trial passes"
# Appended to a copy of scorers/trajectory.py: the scorer as it might be changed after a run.
STRICTER = f'''

import dataclasses as _dataclasses

_THE_RUNS = SPEC.fn


def _stricter(record, case):
    earlier = _THE_RUNS(record, case)
    return Score(name=earlier.name, score=0.0, metadata={{**(earlier.metadata or {{}}), "reason": "{STRICTER_REASON}"}})


SPEC = _dataclasses.replace(SPEC, fn=_stricter)
'''


@dataclass
class Stored:
    braintrust: FakeBraintrust
    run: Path
    dataset: Path
    env: dict[str, str]
    today: Path  # the folder holding the changed copy of scorers/

    def versions(self) -> dict[str, str]:
        """The repository's versions (the bundled judge template: the run's env names no other)."""
        return {item.name: item.version({}) for item in SCORERS}

    def todays_trajectory(self) -> str:
        return code_version("scorers.trajectory", Locator((self.today,))).version

    def today_command(self, module: str, *args: str) -> subprocess.CompletedProcess[str]:
        """`python -m module args` as a user runs it, importing today's scorers (the changed copy) first."""
        env = {**self.env, "PYTHONPATH": os.pathsep.join([str(self.today), str(REPO_ROOT)])}
        return subprocess.run(
            python_module(module, *args), cwd=self.today, env=env, capture_output=True, text=True, timeout=300
        )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stored]:
    root = tmp_path_factory.mktemp("rescore")
    dataset = root / "cases.yaml"
    dataset.write_text(DATASET_HEAD + subtitle_case() + COUNT_POSTS_CASE, encoding="utf-8")
    today = root / "today"
    shutil.copytree(REPO_ROOT / "scorers", today / "scorers", ignore=shutil.ignore_patterns("__pycache__"))
    with (today / "scorers" / "trajectory.py").open("a", encoding="utf-8") as module:
        module.write(STRICTER)
    with FakeBraintrust() as braintrust:
        env = offline_env(
            root / "results",
            EVAL_MODEL="control:oracle",
            EVAL_DATASET=str(dataset),
            EVAL_RUN_ID=RUN_ID,
            **braintrust.env(),
        )
        run_braintrust_eval(env, "evals/eval_prepare_migration.py", "evals/eval_tool_selection.py", send_logs=True)
        yield Stored(braintrust, root / "results" / RUN_ID, dataset, env, today)


def _originals(stored: Stored) -> dict[str, dict[str, Any]]:
    return {
        e["metadata"]["scenario"]: e for e in stored.braintrust.experiments if "rescored_from_run" not in e["metadata"]
    }


# --- the run keeps its scores, each naming its version ------------------------------------------------


def test_the_stored_run_keeps_every_score_with_its_version(stored: Stored) -> None:
    info, records = load_run(stored.run)
    assert sorted(record.case_id for record in records) == CASES
    versions = stored.versions()
    assert info[VERSIONS_KEY] == versions
    assert set(info[PARTS_KEY]) == set(versions) and "scorers.trajectory" in info[PARTS_KEY]["tool_trajectory"]
    scores = load_scores(stored.run)
    assert scores is not None and (stored.run / SCORES_FILE).is_file()
    assert sorted((s.trial, s.name) for s in scores) == sorted(
        (trial_key(record), item.name) for record in records for item in SCORERS
    )  # every scorer of every trial, once
    for score in scores:
        assert score.scorer_version == versions[score.name] == score.metadata["scorer_version"]
    by_name = {(s.case_id, s.name): s.score for s in scores}
    assert by_name[("add-column-subtitle", "tool_trajectory")] == 1.0
    assert by_name[("read-count-posts", "factuality")] is None  # no judge offline: n/a, and kept as such


def test_each_experiment_and_its_score_rows_name_the_versions(stored: Stored) -> None:
    versions = stored.versions()
    originals = _originals(stored)
    assert set(originals) == {"prepare", "tool_selection"}
    for experiment in originals.values():
        assert experiment["metadata"][VERSIONS_KEY] == versions
        score_rows = [
            row
            for row in stored.braintrust.rows(experiment["id"])
            if (row.get("span_attributes") or {}).get("type") == "score"
        ]
        named = {(row.get("metadata") or {}).get("scorer_version") for row in score_rows}
        assert named == set(versions.values()), score_rows[:1]


# --- re-scoring ---------------------------------------------------------------------------------------


def _here(main: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """A command run in this process, with the repository's scorers (cheaper than a subprocess)."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_rescored_with_the_scorers_that_scored_it_nothing_changed(
    stored: Stored, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _here(rescore.main, capsys, str(stored.run), "--dataset", str(stored.dataset))
    assert code == 0, err
    lines = out.splitlines()
    versions = stored.versions()
    for item in DETERMINISTIC:
        [line] = [line for line in lines if line.strip().startswith(item.name + " ")]
        assert line.split() == [item.name, versions[item.name], "->", versions[item.name], "same"]
    assert "0 score(s) changed in 0 trial(s) of 0 case(s)" in lines
    data = json.loads(_here(rescore.main, capsys, str(stored.run), "--dataset", str(stored.dataset), "--json")[1])
    assert data["changed"] == 0 and data["kept_scores"] is True
    assert all(score["kept"] for trial in data["trials"] for score in trial["scores"].values())


def test_rescored_with_a_changed_scorer_each_trial_shows_old_and_new_and_why(stored: Stored) -> None:
    completed = stored.today_command("analysis.rescore", str(stored.run), "--dataset", str(stored.dataset))
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    old, new = stored.versions()["tool_trajectory"], stored.todays_trajectory()
    assert old != new
    # First lines: which scorer's version moved, and what in it changed; the others kept theirs.
    [trajectory] = [line for line in lines[:8] if line.strip().startswith("tool_trajectory ")]
    assert trajectory.split()[:5] == ["tool_trajectory", old, "->", new, "changed:"]
    assert "scorers.trajectory (changed)" in trajectory
    for item in DETERMINISTIC:
        if item.name != "tool_trajectory":
            [line] = [line for line in lines[:8] if line.strip().startswith(item.name + " ")]
            assert line.split()[-1] == "same"
    assert f"2 score(s) changed in 2 trial(s) of {len(CASES)} case(s)" in lines
    for case_id in CASES:
        heading = lines.index(f"{case_id} #0 control:oracle")
        assert lines[heading + 1] == f"  tool_trajectory: 1 pass ({old}) -> 0 fail ({new}): {STRICTER_REASON}"


def test_the_rescored_run_is_logged_to_braintrust_with_the_original_as_its_base(stored: Stored) -> None:
    before = {e["id"] for e in stored.braintrust.experiments}
    completed = stored.today_command(
        "analysis.rescore",
        str(stored.run),
        "--dataset",
        str(stored.dataset),
        "--braintrust",
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    made = [e for e in stored.braintrust.experiments if e["id"] not in before]
    originals = _originals(stored)
    assert {e["metadata"]["scenario"] for e in made} == set(originals)
    old, new = stored.versions()["tool_trajectory"], stored.todays_trajectory()
    for experiment in made:
        original = originals[experiment["metadata"]["scenario"]]
        assert experiment["base_exp_id"] == original["id"]
        assert experiment["name"] == f"{original['name']} · re-scored"
        metadata = experiment["metadata"]
        assert (metadata["rescored_from_run"], metadata["rescored_from_experiment"]) == (RUN_ID, original["id"])
        assert metadata["rescored_from_experiment_name"] == original["name"]
        assert (metadata[VERSIONS_KEY]["tool_trajectory"], metadata["original_scorer_versions"]["tool_trajectory"]) == (
            new,
            old,
        )
        assert "comparison_key" not in metadata  # never the base of a later run
        [row] = stored.braintrust.root_rows(experiment["id"])
        assert row["scores"]["tool_trajectory"] == 0 and row["scores"]["main_branch_integrity"] == 1
        assert row["metadata"]["changed"] == ["tool_trajectory"]
        assert row["metadata"]["rescored"]["tool_trajectory"] == {
            "old": 1.0,
            "old_version": old,
            "new": 0.0,
            "new_version": new,
            "reason": STRICTER_REASON,
        }
        assert stored.braintrust.compared_with(experiment["id"]) == [original["id"]]
        assert f"{experiment['name']}: 1 re-scored trial(s) logged; base: {original['name']}" in completed.stdout


def test_logging_without_a_braintrust_key_stops_before_anything(
    stored: Stored, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if name.startswith("BRAINTRUST_")]:
        monkeypatch.delenv(name)
    before = len(stored.braintrust.experiments)
    code, out, err = _here(rescore.main, capsys, str(stored.run), "--dataset", str(stored.dataset), "--braintrust")
    assert code == 2 and out == ""
    assert "no Braintrust login (BRAINTRUST_API_KEY)" in err
    assert len(stored.braintrust.experiments) == before


# --- reports of a run scored by older versions say so first ----------------------------------------------


def test_the_report_of_a_run_scored_by_older_versions_says_so_first(
    stored: Stored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = stored.versions()["tool_trajectory"], stored.todays_trajectory()
    page = tmp_path / "today.html"
    args = (str(stored.run), "--dataset", str(stored.dataset), "--out", str(page))
    completed = stored.today_command("analysis.report", *args)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stderr.splitlines() == [
        f"report: run {RUN_ID} was scored by older scorer versions than today's (1 of its scores):",
        f"report:   tool_trajectory: {old} at the run, {new} today",
    ]
    body = parse(page.read_text(encoding="utf-8")).root.one("body")
    blocks = [child for child in body.children if isinstance(child, Node) and child.attrs.get("class") != "damage"]
    assert [node.tag for node in blocks[:2]] == ["h1", "div"] and blocks[1].attrs["class"] == "versions"
    assert "Scored by older scorer versions" in blocks[1].text
    row = blocks[1].one("tr", data_score="tool_trajectory")
    assert [cell.text for cell in row.find_all("td")] == ["tool_trajectory", old, new]

    same = tmp_path / "same.html"
    code, _, err = _here(report.main, capsys, str(stored.run), "--dataset", str(stored.dataset), "--out", str(same))
    assert code == 0 and err == ""
    assert not parse(same.read_text(encoding="utf-8")).root.find_all("div", **{"class": "versions"})


def test_a_comparison_names_a_run_scored_by_older_versions_on_its_first_lines(
    stored: Stored, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = stored.versions()["tool_trajectory"], stored.todays_trajectory()
    args = (str(stored.run), str(stored.run), "--dataset", str(stored.dataset))
    completed = stored.today_command("analysis.compare", *args)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.splitlines()[:2] == [
        f"run A ({stored.run}) was scored by older scorer versions than today's (1 of its scores):",
        f"  tool_trajectory: {old} at the run, {new} today",
    ]
    code, out, _ = _here(compare.main, capsys, *args)  # the repository's scorers: the versions that scored it
    assert code == 0 and out.startswith("A: ")
    data = json.loads(_here(compare.main, capsys, *args, "--json")[1])
    assert data["scorer_versions"]["a"] == {"unknown": False, "older": {}}
