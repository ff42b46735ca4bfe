"""control:lexical ranks tools with bm25s, which sets its own logger to DEBUG on import: under the
braintrust CLI's root handler (`logging.basicConfig` at INFO) every index it builds printed a
`DEBUG [bm25s]` line, about 20 a `make ab`. Ranking must print nothing."""

from __future__ import annotations

import sys
import textwrap

from tests.evals.cli import run_in_repo

# What `braintrust eval` does before importing the evals (braintrust/cli/__main__.py), then a ranking.
SCRIPT = textwrap.dedent(
    """
    import logging
    logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s]: %(message)s", level=logging.INFO)
    from harness.models.control.lexical import rank_tools
    tools = [{"name": "prepare_database_migration", "description": "Stage a schema change on a branch"},
             {"name": "run_sql", "description": "Run SQL on a branch"}]
    for _ in range(3):
        scores = rank_tools("schema change: add a column ALTER TABLE", tools)
    assert scores[0] > 0, scores
    logging.getLogger("evals").warning("still heard")
    """
)


def test_ranking_tools_prints_no_library_debug_line() -> None:
    completed = run_in_repo([sys.executable, "-c", SCRIPT], timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert "DEBUG" not in completed.stderr and "bm25s" not in completed.stderr, completed.stderr
    assert "WARNING [evals]: still heard" in completed.stderr  # the CLI's own logging still works
