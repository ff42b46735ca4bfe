"""Every `Eval` that runs is declared by an eval file, from a description, through one function.

Fixed trials, adaptive rounds, A/B arms and the judge's calibration describe `Experiment`s;
`eval_arguments` alone turns one into `Eval`'s arguments, so the call a reader sees in
`evals/eval_*.py` is the call that runs.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

from braintrust import Eval

from braintrust_run.description import Experiment, eval_arguments, experiment_name
from harness.config import Settings

ROOT = Path(__file__).resolve().parents[2]
THE_CALL = "Eval(experiment.project, **eval_arguments(experiment))"


def eval_calls(root: Path) -> dict[str, list[str]]:
    """Each module of `root/evals` that calls `Eval`, with its calls as written."""
    found: dict[str, list[str]] = {}
    for path in sorted(path for folder in ("evals", "braintrust_run") for path in (root / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [
            ast.unparse(node)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
            if (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == "Eval"
        ]
        if calls:
            found[path.relative_to(root).as_posix()] = calls
    return found


def test_only_eval_files_call_eval_and_each_through_eval_arguments() -> None:
    found = eval_calls(ROOT)
    files = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "evals").glob("eval_*.py"))
    assert sorted(found) == files, "an Eval declared outside the eval files runs what no eval file shows"
    assert {path: calls for path, calls in found.items() if calls != [THE_CALL]} == {}


def test_the_scan_sees_an_eval_declared_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "_rounds.py").write_text("import braintrust\nbraintrust.Eval('p', data=[], task=None)\n")
    (tmp_path / "evals" / "eval_x.py").write_text(f"from braintrust import Eval\n{THE_CALL}\n")
    assert eval_calls(tmp_path) == {
        "evals/_rounds.py": ["braintrust.Eval('p', data=[], task=None)"],
        "evals/eval_x.py": [THE_CALL],
    }


def _described(**changes: object) -> Experiment:
    fields: dict[str, object] = {
        "project": "p",
        "name": "n",
        "data": [],
        "task": len,
        "scores": [],
        "metadata": {"model": "m"},
        "tags": ["prepare"],
        "concurrency": 3,
        "reporter": "r",
        "sending": False,
    }
    return Experiment(**{**fields, **changes})  # type: ignore[arg-type]


def test_every_field_of_a_description_reaches_eval_and_eval_knows_every_argument() -> None:
    accepted = set(inspect.signature(Eval).parameters)
    arguments = eval_arguments(_described(comparison={"base_experiment_id": "e1", "summarize_scores": True}))
    assert set(arguments) <= accepted, set(arguments) - accepted
    # What a Braintrust user looks for in an Eval is there (issue 25: the eval files read like its examples).
    assert set(arguments) >= {"experiment_name", "data", "task", "scores", "metadata", "trial_count", "reporter"}
    assert arguments["no_send_logs"] is True and arguments["max_concurrency"] == 3
    assert arguments["base_experiment_id"] == "e1"
    # Each field but the project (Eval's first argument) changes what Eval is given.
    for item in dataclasses.fields(Experiment):
        if item.name == "project":
            continue
        changed: dict[str, object] = {item.name: object()}
        if item.name == "sending":
            changed = {"sending": True}
        if item.name == "comparison":
            changed = {"comparison": {"base_experiment_id": "other"}}
        assert eval_arguments(_described(**changed)) != eval_arguments(_described()), item.name


def test_an_experiments_name_says_what_differs_and_nothing_else() -> None:
    settings = Settings(model="control:oracle")
    plain = experiment_name("prepare_migration", "control:oracle", settings, "default", False, None)
    assert plain == f"prepare_migration · control:oracle · {settings.server_label} · default"
    swept = experiment_name("prepare_migration", "A: x", settings, "v2", True, "nightly-7")
    assert swept == f"prepare_migration · A: x · {settings.server_label} · v2 · 0 decoys · nightly-7"
    decoys = settings.model_copy(update={"decoys": 4})
    assert experiment_name("e", "m", decoys, "default", False, None).endswith(" · default · 4 decoys")
