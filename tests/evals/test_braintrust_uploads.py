"""Acceptance: the real `braintrust eval` CLI with a key, against a recording stand-in of Braintrust.

What a run sends (one experiment per model, complete metadata, git info, every trial once with its
scores, at most 20 KB a trial), which experiment it is compared with (the previous one with the
same comparison key, named by id), the overflow path for large payloads, and what happens when the
server refuses every upload (the run fails naming the rows lost; `results/` is whole).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.cases import load_cases
from harness.models.rules import DEFAULT_MAX_TOKENS
from harness.recording.store import load_run
from tests.evals.cli import DATASET_HEAD, offline_env, run_braintrust_eval, run_cli, subtitle_case
from tests.fakes.braintrust_server import API_KEY, FakeBraintrust
from tests.planted import CONNECTION_CASE, assert_no_password, planted_dataset

BUDGET_BYTES = 20 * 1024  # per trial, on the bundled cases
ONE_CASE = DATASET_HEAD + subtitle_case()
METADATA_KEYS = {
    "temperature",
    "max_tokens",
    "max_turns",
    "system_prompt_hash",
    "judge_provider",
    "judge_model",
    "tool_view_hash",
    "dataset_hash",
    "comparison_key",
    "git_commit",
}


@pytest.mark.long  # three keyed runs; test_login.py and the tests below upload one
def test_lean_uploads_complete_metadata_and_the_right_base(tmp_path: Path) -> None:
    prepare_cases = {case.id for case in load_cases(scenario="prepare")}
    with FakeBraintrust() as braintrust:
        env = offline_env(tmp_path / "first", EVAL_MODEL="control:oracle,control:unsafe", **braintrust.env())
        lines = run_braintrust_eval(env, "evals/eval_prepare_migration.py", send_logs=True)
        first = braintrust.experiments
        assert len(first) == 2 and len(lines) == 2  # one experiment per model
        for experiment in first:
            metadata = experiment["metadata"]
            assert set(metadata) >= METADATA_KEYS, METADATA_KEYS - set(metadata)
            assert metadata["max_turns"] == 12 and metadata["max_tokens"] == DEFAULT_MAX_TOKENS
            assert len(metadata["tool_view_hash"]) >= 16 and len(metadata["dataset_hash"]) == 16
            repo = experiment["repo_info"]
            assert repo["commit"] and repo["dirty"] is not None and "git_diff" not in {k for k, v in repo.items() if v}
            assert experiment["base_exp_id"] is None  # nothing earlier with the same key
            roots = braintrust.root_rows(experiment["id"])
            assert sorted(row["metadata"]["case_id"] for row in roots) == sorted(prepare_cases)  # each trial once
            for row in roots:
                assert set(row["trace_scores"]) >= {"main_branch_integrity", "tool_trajectory", "data_integrity"}
                assert "trial" not in row["metadata"] and "case" not in row["metadata"]
                assert row["metadata"]["tool_sequence"] and row["metadata"]["case_hash"]
            per_trial = braintrust.bytes_uploaded(experiment["id"]) / len(roots)
            print(f"{metadata['model']}: {per_trial / 1024:.1f} KB uploaded per trial")
            assert per_trial <= BUDGET_BYTES, f"{metadata['model']}: {per_trial:.0f} bytes per trial"

        # A second run (one case, one model; payloads forced through the overflow path) is compared
        # with the first run's experiment of the same model, not with the project's newest one.
        dataset = tmp_path / "one.yaml"
        dataset.write_text(textwrap.dedent(ONE_CASE))
        braintrust.logs3_payload_max_bytes = 1000  # a tool span row is larger
        env = offline_env(tmp_path / "second", EVAL_MODEL="control:oracle", EVAL_DATASET=str(dataset))
        env |= braintrust.env() | {"EVAL_JUDGE_PROVIDER": "braintrust"}  # the judge goes through the gateway
        [line] = run_braintrust_eval(env, "evals/eval_prepare_migration.py", send_logs=True)
        second = braintrust.experiments[-1]
        oracle_first = next(e for e in first if e["metadata"]["model"] == "control:oracle")
        assert second["base_exp_id"] == oracle_first["id"]
        assert line["comparison_experiment_name"] == oracle_first["name"]
        assert second["metadata"]["judge_provider"] == "braintrust"
        chats = [request for request in braintrust.requests if request.path.endswith("/chat/completions")]
        assert len(chats) == 3, chats  # the judge's preflight (a classification, a forced call), one verdict
        assert all(chat.headers["authorization"] == f"Bearer {API_KEY}" for chat in chats)
        assert second["metadata"]["dataset_hash"] != oracle_first["metadata"]["dataset_hash"]
        assert any(upload.overflow for upload in braintrust.uploads)  # large payloads went by signed URL
        [root] = braintrust.root_rows(second["id"])
        assert root["trace_scores"]["tool_trajectory"] == 1 and root["trace_scores"]["factuality"] == 1
        assert API_KEY not in "".join(path.read_text() for path in (tmp_path / "second").rglob("*.json*"))


@pytest.mark.long  # test_login.py counts lost uploads in a run of one trial
def test_refused_uploads_fail_the_run_and_results_stay_whole(tmp_path: Path) -> None:
    dataset = tmp_path / "one.yaml"
    dataset.write_text(textwrap.dedent(ONE_CASE))
    results = tmp_path / "results"
    with FakeBraintrust(refuse_logs=503) as braintrust:
        env = offline_env(
            results,
            EVAL_MODEL="control:oracle",
            EVAL_DATASET=str(dataset),
            EVAL_TRIALS="2",
            BRAINTRUST_NUM_RETRIES="0",  # refuse at once: the retry sleeps would only slow the test
            **braintrust.env(),
        )
        completed = run_cli(env, "evals/eval_prepare_migration.py", send_logs=True)
        refused = braintrust.refused_rows
    assert completed.returncode == 1, completed.stderr[-3000:]
    assert refused > 0
    assert f"FAIL {refused} row(s) uploaded to Braintrust were lost" in completed.stderr
    [run] = [path for path in results.iterdir() if path.is_dir()]
    _, records = load_run(run)
    assert sorted(record.trial_index for record in records) == [0, 1]
    assert all(record.outcome == "ok" and record.case_hash for record in records)
    assert list((run / "braintrust-failed").glob("*.json"))  # the dropped rows are kept to send again


def test_passwords_in_connection_strings_are_never_uploaded(tmp_path: Path) -> None:
    """A connection string the server hands out and one stored in the data reach the model redacted,
    and so neither Braintrust's uploads nor `results/` ever hold their passwords."""
    dataset = planted_dataset(tmp_path / "dataset", "version: 1\ncases:" + CONNECTION_CASE)
    with FakeBraintrust() as braintrust:
        env = offline_env(tmp_path / "results", EVAL_MODEL="control:oracle", EVAL_DATASET=str(dataset))
        run_braintrust_eval(env | braintrust.env(), "evals/eval_tool_selection.py", send_logs=True)
        uploaded = b"".join(request.raw for request in braintrust.requests) + b"".join(braintrust.state.blobs.values())
    _, [record] = load_run(next((tmp_path / "results").iterdir()))
    results = {call.name: call.result_text for call in record.tool_calls}
    assert "postgresql://" in results["get_connection_string"] and ":[REDACTED]@" in results["get_connection_string"]
    assert "backup_admin:[REDACTED]@db.example.com" in results["run_sql"]
    assert b"backup_admin:[REDACTED]@db.example.com" in uploaded  # the tool span went up, redacted
    stored = "".join(path.read_text(encoding="utf-8") for path in (tmp_path / "results").rglob("*") if path.is_file())
    assert_no_password(uploaded.decode("utf-8", errors="replace"), "Braintrust")
    assert_no_password(stored, "results/")
