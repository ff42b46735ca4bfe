"""The offline proposer: each operator by hand, and the train part the only one it may read."""

from __future__ import annotations

import pytest

from harness.cases import load_cases
from tuning.proposer import (
    TrainFailure,
    name_alternative,
    name_safe_tool,
    propose,
    shorten,
    use_when,
    warning_first,
)
from tuning.splits import split_cases

RUN_SQL = "Runs SQL on the database and returns rows. Never run schema changes here. Results are capped."
ARGS = ("run_sql", "prepare_database_migration")


def test_each_operator_does_its_one_thing() -> None:
    assert warning_first(RUN_SQL, *ARGS) == (
        "Never run schema changes here. Runs SQL on the database and returns rows. Results are capped."
    )
    assert shorten(RUN_SQL, *ARGS) == "Runs SQL on the database and returns rows. Never run schema changes here."
    assert name_safe_tool(RUN_SQL, *ARGS).endswith(
        "To change a schema safely, use prepare_database_migration instead of run_sql."
    )
    assert name_safe_tool(name_safe_tool(RUN_SQL, *ARGS), *ARGS) == name_safe_tool(RUN_SQL, *ARGS)  # once only
    assert name_alternative(RUN_SQL, *ARGS).startswith("For schema changes use prepare_database_migration, not")
    assert "Do not use when: a schema change is asked for (prepare_database_migration stages it)." in use_when(
        RUN_SQL, *ARGS
    )


def test_the_proposer_rewrites_the_most_misused_tool_from_train_failures_only() -> None:
    splits = split_cases(load_cases(), seed="tune-1")
    train, validation = splits.train, splits.validation
    prepare = "Creates a temporary branch and runs SQL there. Rarely needed."
    current = {"run_sql": RUN_SQL, "describe_table_schema": "Describes a table.", "prepare_database_migration": prepare}
    surface = {**current, "run_sql": "Runs one SQL statement.", "prepare_database_migration": "Stages a change."}
    failures = [
        TrainFailure(train[0], "run_sql", "prepare_database_migration"),
        TrainFailure(train[1], "run_sql", "prepare_database_migration"),
        TrainFailure(train[2], "describe_table_schema", "run_sql"),
    ]
    made = propose(current, failures, splits, surface=surface)
    assert [candidate.name for candidate in made] == [
        "prepare_database_migration+run_sql-restore",
        "prepare_database_migration-purpose_first",
        "run_sql-name_safe_tool",
        "run_sql-warning_first",
        "run_sql-use_when",
        "run_sql-name_alternative",
        "run_sql-shorten",
    ]
    assert made[1].descriptions["prepare_database_migration"].startswith("For schema changes (ALTER TABLE")
    assert made[0].descriptions == {  # both tools of the misuse in the server's own words
        "run_sql": "Runs one SQL statement.",
        "prepare_database_migration": "Stages a change.",
    }
    assert all(set(candidate.descriptions) == {"run_sql"} for candidate in made[2:])
    assert propose(current, failures, splits, surface=surface) == made  # the same failures, the same candidates
    assert [c.name for c in propose(current, failures, splits, limit=2)] == [  # no surface: nothing to restore
        "prepare_database_migration-purpose_first",
        "run_sql-name_safe_tool",
    ]
    with pytest.raises(ValueError, match=f"case '{validation[0]}' is in the validation part"):
        propose(current, [*failures, TrainFailure(validation[0], "run_sql", "prepare_database_migration")], splits)
    assert propose(current, [], splits) == []
