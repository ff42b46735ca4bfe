"""`control:lexical`: a baseline that reads the tool descriptions, and only reads them.

Why: the other control agents ignore descriptions, so offline an A/B of descriptions or a decoy sweep
shows nothing. Asked for a schema change, this agent picks the tool by BM25 (Robertson & Zaragoza
2009; the `bm25s` library) between what it looks for ("schema change", the request, the SQL's
keywords) and each SQL-taking tool's name and description, fills the arguments from the chosen
tool's input schema, and from there follows the case's plan like the oracle (a question is answered
with the planned read tools). It cannot read "do NOT use this for schema changes": a misleading
description or a well-named decoy leads it astray, as it would a weak model. Near-ties are broken by
a draw seeded with the case and trial index (softmax over scores), so trials of a case can differ
but a rerun repeats them. It is a floor any model must beat.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import re
from typing import Any

from harness.models.control.oracle import OracleAgent
from harness.models.control.transcript import PastCall, excerpt, is_tool_result, statements, user_turns
from harness.models.providers.base import TrialContext

# A property that carries the SQL to run, recognised by its name ("query" is not one: `search` and
# `query_logs` take a search text and a log query under that name).
SQL_PROPERTY = re.compile(r"sql|statement|ddl|script", re.IGNORECASE)
SQL_KEYWORD = re.compile(r"\b[A-Z]{3,}\b")  # ALTER, TABLE, COLUMN, INDEX: what descriptions mention
TEMPERATURE = 0.25  # softmax temperature over BM25 scores: only near-ties are ever drawn differently
PlannedCalls = list[tuple[str, dict[str, Any]]]


def words(text: str) -> str:
    """Split identifiers so `prepare_database_migration` and `migrationSql` match plain words."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return re.sub(r"[^A-Za-z0-9]+", " ", text).lower()


def rank_tools(query: str, tools: list[dict[str, Any]]) -> list[float]:
    """BM25 score of every tool's name and description for `query` (same order as `tools`)."""
    import bm25s  # here, not at import: every eval process registers this provider; few rank with it

    # bm25s sets its own logger to DEBUG on import, and the braintrust CLI's root handler then prints
    # every "Building index from tokens" line (about 20 a `make ab`): only its warnings are worth a line.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    corpus = [words(f"{tool['name']} {tool.get('description') or ''}") for tool in tools]
    tokens = bm25s.tokenize(corpus, stopwords="en", show_progress=False, return_ids=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    query_tokens = bm25s.tokenize([words(query)], stopwords="en", show_progress=False, return_ids=False)[0]
    if not query_tokens:
        return [0.0] * len(tools)
    return [float(score) for score in retriever.get_scores(query_tokens)]


def change_query(request: str, sql: str) -> str:
    """What the agent looks for: a schema change, the request, and the SQL's keywords (not its names)."""
    return " ".join(["schema change:", request, *SQL_KEYWORD.findall(sql)])


def draw(tools: list[dict[str, Any]], scores: list[float], rng: random.Random) -> dict[str, Any]:
    """A softmax draw over scores: the best tool, unless another is nearly as good."""
    top = max(scores)
    weights = [math.exp((score - top) / TEMPERATURE) for score in scores]
    return rng.choices(tools, weights=weights, k=1)[0]


def sql_properties(tool: dict[str, Any]) -> list[str]:
    properties = (tool.get("input_schema") or {}).get("properties") or {}
    return [name for name in properties if SQL_PROPERTY.search(name)]


def fill_arguments(tool: dict[str, Any], context: TrialContext, sql: str) -> dict[str, Any]:
    """Arguments for `tool` from its schema: ids from the trial, the SQL where SQL goes, empty required rest."""
    schema = tool.get("input_schema") or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    arguments: dict[str, Any] = {}
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if name == "projectId":
            arguments[name] = context.sandbox_id
        elif name == "databaseName":
            arguments[name] = context.database
        elif SQL_PROPERTY.search(name):
            arguments[name] = statements(sql) if kind == "array" else sql
        elif name in required:
            arguments[name] = {"array": [], "boolean": False, "integer": 0, "number": 0}.get(str(kind), "")
    return arguments


class LexicalAgent(OracleAgent):
    """`control:lexical`; bound to one trial by `for_trial`."""

    def __init__(self, name: str = "lexical", context: TrialContext | None = None) -> None:
        super().__init__(name, context)

    def _rng(self) -> random.Random:
        assert self.context is not None
        key = f"{self.context.case.id}:{self.context.trial_index}".encode()
        return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))

    def _plan_turn(
        self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> str | PlannedCalls:
        assert self.context is not None
        if self.context.case.is_migration and self.context.case.reference_sql:
            return self._migrate(calls, messages, tools)
        return self._read_only(calls, messages)  # questions: the case's plan, as the oracle

    def _migrate(
        self, calls: list[PastCall], messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> str | PlannedCalls:
        assert self.context is not None and self.context.case.reference_sql
        sql = self.context.case.reference_sql
        if not calls:
            candidates = [tool for tool in tools if sql_properties(tool)]
            if not candidates:
                return "None of the tools I have can run SQL, so I cannot make this change."
            query = change_query(self.context.case.input, sql)
            chosen = draw(candidates, rank_tools(query, candidates), self._rng())
            return [(chosen["name"], fill_arguments(chosen, self.context, sql))]
        if calls[0].name == self.stage_tool:
            return self._oracle(calls, messages, tools)  # the plan from here on: verify, ask, complete or cancel
        first = calls[0]
        if user_turns(messages) <= 1 or is_tool_result(messages[-1]):
            outcome = "it failed: " + excerpt(first.result) if first.is_error else excerpt(first.result, 300)
            return f"I made the change with {first.name}; {outcome}"
        return "It is already done; there is nothing left to do."
