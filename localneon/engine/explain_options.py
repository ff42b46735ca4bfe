"""Neon's ``EXPLAIN`` option ``FILECACHE``: accepted and dropped before the SQL reaches PostgreSQL.

Neon's compute reports its local file cache in ``EXPLAIN (FILECACHE)``; vanilla PostgreSQL rejects
the option ("unrecognized EXPLAIN option"), and Neon's own server asks for it by default in
``explain_sql_statement``. localneon has no file cache, so the option is removed (with its value,
``FILECACHE`` or ``FILECACHE true/false``) from every ``EXPLAIN`` statement, found by PostgreSQL's
own parser (pglast), so a literal, identifier or comment containing the word is never touched.
Statements without the option keep their exact text; a rewritten statement is deparsed by pglast.
"""

from __future__ import annotations

from typing import Any

from pglast import ast, parse_sql
from pglast.parser import ParseError
from pglast.stream import RawStream

NEON_ONLY_OPTIONS = frozenset({"filecache"})


def _rewritten(statement: Any) -> str | None:
    """The statement without Neon-only EXPLAIN options, deparsed; None when it has none."""
    if not isinstance(statement, ast.ExplainStmt) or not statement.options:
        return None
    kept = tuple(o for o in statement.options if getattr(o, "defname", None) not in NEON_ONLY_OPTIONS)
    if len(kept) == len(statement.options):
        return None
    statement.options = kept or None
    return str(RawStream()(statement))


def without_neon_explain_options(text: str) -> str:
    """``text`` with ``FILECACHE`` removed from its EXPLAIN statements; otherwise unchanged.

    SQL that does not parse is returned as it is, for PostgreSQL to report its own syntax error.
    """
    if "filecache" not in text.lower():  # the parser only runs when the option can be there
        return text
    try:
        statements = parse_sql(text)
    except ParseError:
        return text
    pieces: list[str] = []  # pglast's locations count characters of ``text``
    position = 0
    for raw in statements:
        replacement = _rewritten(raw.stmt)
        if replacement is None:
            continue
        start = raw.stmt_location or 0
        end = start + raw.stmt_len if raw.stmt_len else len(text)
        lead = len(text[start:end]) - len(text[start:end].lstrip())  # whitespace after the previous ';'
        pieces += [text[position : start + lead], replacement]
        position = end
    if not pieces:
        return text
    return "".join(pieces) + text[position:]
