"""The scores a run keeps (`scores.jsonl`) and the versions it names: read back, compared with today's,
merged across shards, and noted in `run.json` beside what the harness wrote there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.merge import MergeError, merge_runs
from analysis.stored_scores import (
    SCORES_FILE,
    VERSIONS_KEY,
    ScoresFile,
    ScoresFileError,
    by_trial,
    load_scores,
    stored,
    trial_key,
    version_note,
)
from harness.config import Settings
from harness.recording.store import RUN_FILE, ResultsStore
from tests.scorers.conftest import record


def _shard(folder: Path, index: int, versions: dict[str, str]) -> Path:
    """A shard's run folder: one record, its one kept score, its run.json naming `versions`."""
    trial = record("read-count-posts", trial_index=index, started_at=f"2026-12-04T00:00:0{index}Z")
    store = ResultsStore(folder, f"shard{index}")
    store.append(trial)
    store.add_to_run({"run_id": "night", VERSIONS_KEY: versions})
    metadata = {"reason": "ok", "scorer_version": versions["tool_trajectory"]}
    ScoresFile(store.run_dir).append(stored(trial, "tool_trajectory", 1.0, metadata))
    (store.run_dir / "plan.json").write_text(json.dumps({"trials": 1, "shard": f"{index + 1}/2"}))
    return store.run_dir


def test_kept_scores_are_read_back_by_trial_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    trial = record("read-count-posts", started_at="2026-12-04T00:00:00Z")
    scores = ScoresFile(tmp_path)
    scores.append(stored(trial, "tool_trajectory", 0.0, {"reason": "why", "scorer_version": "aaaaaaaaaaaa"}))
    assert load_scores(tmp_path / "elsewhere") is None  # a run made before scores were kept
    with (tmp_path / SCORES_FILE).open("a", encoding="utf-8") as handle:
        handle.write('{"trial": "half a li')  # a killed process
    [kept] = load_scores(tmp_path) or []
    assert (kept.score, kept.scorer_version, kept.metadata["reason"]) == (0.0, "aaaaaaaaaaaa", "why")
    assert by_trial([kept]) == {trial_key(trial): {"tool_trajectory": kept}}
    (tmp_path / SCORES_FILE).write_text('{"trial": 1}\n{"trial": 2}\n', encoding="utf-8")
    with pytest.raises(ScoresFileError, match=rf"{SCORES_FILE}:1: not a stored score"):
        load_scores(tmp_path)


def test_the_trial_key_tells_apart_what_one_run_may_hold() -> None:
    one = record("read-count-posts", started_at="t0")
    others = [
        record("read-count-posts", trial_index=1, started_at="t0"),
        one.model_copy(update={"config": one.config.model_copy(update={"model": "control:oracle"})}),
        one.model_copy(update={"config": one.config.model_copy(update={"decoy_count": 2})}),
        one.model_copy(update={"config": one.config.model_copy(update={"description_variant": "terse"})}),
        one.model_copy(update={"started_at": "t1"}),
    ]
    assert len({trial_key(one), *(trial_key(other) for other in others)}) == 1 + len(others)


def test_the_note_names_each_score_made_by_another_version() -> None:
    today = {"tool_trajectory": "b" * 12, "data_integrity": "c" * 12}
    trial = record("read-count-posts")
    lines = [stored(trial, "tool_trajectory", 1.0, {"scorer_version": "a" * 12})]
    note = version_note({VERSIONS_KEY: {"data_integrity": "c" * 12}}, lines, today)
    assert note.older == {"tool_trajectory": (["a" * 12], "b" * 12)} and not note.unknown
    assert note.lines("run r") == [
        "run r was scored by older scorer versions than today's (1 of its scores):",
        f"  tool_trajectory: {'a' * 12} at the run, {'b' * 12} today",
    ]
    assert not version_note({VERSIONS_KEY: today}, None, today).differs
    unknown = version_note({}, None, today)
    assert unknown.unknown and "names no scorer versions" in unknown.lines()[0]


def test_run_json_keeps_the_harness_settings_and_the_noted_versions_in_either_order(tmp_path: Path) -> None:
    env = {"EVAL_RESULTS_DIR": str(tmp_path), "EVAL_RUN_ID": "r1"}
    settings = Settings.from_env(env=env, dotenv_path=tmp_path / "no.env", warn=False)
    store = ResultsStore(tmp_path, "r1")
    store.write_run(settings)
    store.add_to_run({VERSIONS_KEY: {"tool_trajectory": "a" * 12}})
    info = json.loads((store.run_dir / RUN_FILE).read_text())
    assert info["settings"] and info[VERSIONS_KEY] == {"tool_trajectory": "a" * 12}
    first = ResultsStore(tmp_path, "r2")
    first.add_to_run({VERSIONS_KEY: {"tool_trajectory": "a" * 12}})
    first.write_run(settings.model_copy(update={"run_id": "r2"}))
    info = json.loads((first.run_dir / RUN_FILE).read_text())
    assert info["settings"] and info[VERSIONS_KEY] == {"tool_trajectory": "a" * 12}


def test_a_merge_keeps_every_shards_scores_and_refuses_shards_of_other_versions(tmp_path: Path) -> None:
    versions = {"tool_trajectory": "a" * 12}
    runs = [_shard(tmp_path / "shards", index, versions) for index in (0, 1)]
    assert merge_runs(tmp_path / "merged", runs) == 2
    merged = json.loads((tmp_path / "merged" / RUN_FILE).read_text())
    assert merged[VERSIONS_KEY] == versions
    assert sorted(item.trial_index for item in load_scores(tmp_path / "merged") or []) == [0, 1]
    other = _shard(tmp_path / "other", 1, {"tool_trajectory": "b" * 12})
    with pytest.raises(MergeError, match=f"scored by tool_trajectory {'b' * 12}.*by {'a' * 12}"):
        merge_runs(tmp_path / "mixed", [runs[0], other])
