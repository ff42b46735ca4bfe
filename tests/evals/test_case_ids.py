"""EVAL_CASE_IDS keeps a run to the cases it names (the tuning loop runs a split's part this way)."""

from __future__ import annotations

import pytest

from braintrust_run.settings import EvalSettings
from evals._wiring import chosen_cases
from harness.cases import load_cases


def test_the_named_cases_are_kept_and_an_unknown_id_stops_the_run() -> None:
    every = load_cases()
    prepare = load_cases(scenario="prepare")
    named = frozenset({prepare[0].id, prepare[1].id, every[-1].id})
    kept = chosen_cases(prepare, named, every)  # an eval file keeps the named cases of its scenario
    assert [case.id for case in kept] == [prepare[0].id, prepare[1].id]
    assert chosen_cases(prepare, frozenset(), every) == prepare  # none named: every case
    with pytest.raises(ValueError, match="EVAL_CASE_IDS names no case of the dataset: no-such-case"):
        chosen_cases(prepare, frozenset({prepare[0].id, "no-such-case"}), every)


def test_the_setting_reads_a_comma_separated_list() -> None:
    settings = EvalSettings.from_env({"EVAL_CASE_IDS": " a, b ,,c "})
    assert settings.case_ids == frozenset({"a", "b", "c"})
    assert EvalSettings.from_env({}).case_ids == frozenset()
