"""When two schema dumps differ as text but not as a change the user could tell apart.

The integrity score compares main after an approved change with the expected state (the case's
reference SQL applied). Two differences in the text are not differences in what the user asked for:
- the name of an index or a constraint the user never named ("add an index on events (site_id,
  kind)"): the reference SQL had to pick one, and an agent that picks another made the same index;
- the way a view's query is written, where PostgreSQL keeps it as written: `a.id = s.account_id` and
  `s.account_id = a.id`, conditions joined by AND in another order.
So both dumps are cut into their objects, the free names replaced by `?`, each view's query reduced
to its parse tree with the operands of `=`, `AND` and `OR` in a fixed order, and the two are equal
when the objects are, as multisets (pg_dump orders objects by name, so a renamed index moves).
A name the user's words contain (the request or a follow-up) is kept: then it must match.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pglast

_HEADER = re.compile(r"^-- Name: (?P<name>.*?); Type: (?P<type>[^;]+); Schema: [^;]+;.*$", re.MULTILINE)
_NAMED_TYPES = ("INDEX", "CONSTRAINT", "FK CONSTRAINT")
_INLINE_CONSTRAINT = re.compile(r"\bCONSTRAINT (\"[^\"]+\"|\w+) ")
_VIEW = re.compile(r"(CREATE (?:MATERIALIZED )?VIEW .*?;)", re.DOTALL)
_COMMUTATIVE = {"=", "<>", "+", "*"}


def _said(name: str, words: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name.strip(chr(34)))}(?![\w])", words) is not None


def _canonical(node: Any) -> Any:
    """A parse tree without source positions, with commutative operands and AND/OR arguments sorted."""
    if isinstance(node, dict):
        cleaned = {key: _canonical(value) for key, value in node.items() if key != "location"}
        expression = cleaned.get("A_Expr")
        if isinstance(expression, dict) and expression.get("kind") == "AEXPR_OP":
            names = [part.get("String", {}).get("sval") for part in expression.get("name", [])]
            if names and names[-1] in _COMMUTATIVE:
                pair = sorted([expression.get("lexpr"), expression.get("rexpr")], key=lambda item: json.dumps(item))
                expression["lexpr"], expression["rexpr"] = pair
        boolean = cleaned.get("BoolExpr")
        if isinstance(boolean, dict) and boolean.get("boolop") in ("AND_EXPR", "OR_EXPR"):
            boolean["args"] = sorted(boolean.get("args", []), key=lambda item: json.dumps(item))
        return cleaned
    if isinstance(node, list):
        return [_canonical(item) for item in node]
    return node


def _view_text(body: str) -> str:
    """The view's query as a canonical parse tree (its text when it does not parse)."""
    match = _VIEW.search(body)
    if not match:
        return body
    try:
        tree = json.loads(pglast.parser.parse_sql_json(match.group(1)))
    except Exception:
        return body
    return body.replace(match.group(1), json.dumps(_canonical(tree), sort_keys=True))


def _blocks(schema: str, words: str) -> Counter[str]:
    """The dump's objects, each as text with free names replaced and view queries made canonical."""
    marks = list(_HEADER.finditer(schema))
    found: Counter[str] = Counter()
    if marks and schema[: marks[0].start()].strip():
        found[schema[: marks[0].start()]] += 1
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(schema)
        block, kind = schema[mark.start() : end], mark.group("type")
        if kind in _NAMED_TYPES:
            name = mark.group("name").split(" ")[-1]
            if not _said(name, words):
                block = re.sub(rf"(?<![\w]){re.escape(name)}(?![\w])", "?", block)
        elif kind == "TABLE":
            block = _INLINE_CONSTRAINT.sub(lambda m: m.group(0) if _said(m.group(1), words) else "CONSTRAINT ? ", block)
        elif kind in ("VIEW", "MATERIALIZED VIEW"):
            block = _view_text(block)
        found[block] += 1
    return found


def equivalent(expected: str, actual: str, words: str) -> bool:
    """Whether two normalised dumps differ only in names the user did not give and in how views are
    written (see the module docstring); `words` are the user's (request and follow-ups)."""
    return expected == actual or _blocks(expected, words) == _blocks(actual, words)
