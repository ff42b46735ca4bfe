"""What a piece of SQL does, read from PostgreSQL's own parser (pglast) rather than regexes.

Used by the trajectory scorer to tell schema changes from reads and to check that a migration
touches the table and column the case asks for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pglast

# Statement node types that change schema or destroy data wholesale. Anything starting with these
# prefixes also counts (CreateTrigStmt, AlterSeqStmt, DropRoleStmt, ...).
_DDL_PREFIXES = ("Create", "Alter", "Drop", "Rename", "Truncate", "Grant", "Comment", "Reindex", "Cluster")
_DDL_NAMES = {"IndexStmt", "ViewStmt", "RuleStmt", "DefineStmt", "CompositeTypeStmt", "SecLabelStmt", "DoStmt"}
# Statements that only read (or set session state). Everything else may write; so may a read
# wrapping a data-modifying node (`WITH d AS (DELETE ...) SELECT ...`).
# A temporary table (`CREATE TEMP TABLE`, `... AS`, `SELECT ... INTO TEMP`) lives in the session that
# made it and is gone when it ends: nothing a later connection sees, so it is neither DDL nor a write.
TEMP_TABLE = "TempTableStmt"
_READ_NAMES = {"SelectStmt", "ExplainStmt", "VariableShowStmt", "VariableSetStmt", "TransactionStmt", TEMP_TABLE}
_MODIFYING = {"InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt"}


@dataclass
class SqlInfo:
    """The parsed facts about one SQL text."""

    parses: bool
    error: str | None = None
    statement_types: list[str] = field(default_factory=list)
    tables: set[str] = field(default_factory=set)
    columns: set[str] = field(default_factory=set)
    modifying: set[str] = field(default_factory=set)  # INSERT/UPDATE/DELETE/MERGE nodes anywhere in the tree

    @property
    def write_types(self) -> list[str]:
        """Statement types that change data or schema, nested data-modifying ones included."""
        top = [name for name in self.statement_types if name not in _READ_NAMES]
        return top + sorted(self.modifying - set(top))

    @property
    def has_write(self) -> bool:
        return bool(self.write_types)

    @property
    def ddl_types(self) -> list[str]:
        return [name for name in self.statement_types if is_ddl_type(name)]

    @property
    def has_ddl(self) -> bool:
        return bool(self.ddl_types)

    def touches(self, table: str, column: str | None = None) -> bool:
        """True when the SQL names the table (schema-qualified or not) and, if given, the column."""
        wanted_table = table.split(".")[-1].lower()
        if wanted_table not in self.tables:
            return False
        return column is None or column.lower() in self.columns


def is_ddl_type(node_name: str) -> bool:
    return node_name in _DDL_NAMES or node_name.startswith(_DDL_PREFIXES)


def analyse(sql: str) -> SqlInfo:
    """Parse SQL; never raises. Unparseable SQL comes back with parses=False and the parser's message."""
    try:
        statements = pglast.parse_sql(sql)
    except Exception as error:  # pglast raises ParseError, and others on odd input (e.g. NUL bytes)
        return SqlInfo(parses=False, error=str(error))
    info = SqlInfo(parses=True)
    for raw in statements:
        node: Any = raw.stmt
        tree = node(skip_none=True)
        info.statement_types.extend(_statement_types(tree))
        for node in _walk(tree):
            _collect(node, info)
    return info


def _statement_types(tree: dict[str, Any]) -> list[str]:
    """The statement's node type; EXPLAIN is looked through, since EXPLAIN ANALYZE executes its query."""
    name = str(tree.get("@", ""))
    if name == "ExplainStmt" and isinstance(tree.get("query"), dict):
        return [name, *_statement_types(tree["query"])]
    if name == "CreateTableAsStmt" or (name == "SelectStmt" and tree.get("intoClause")):
        into = tree.get("into") or tree.get("intoClause") or {}
        return [TEMP_TABLE if _temporary(into.get("rel")) else "CreateTableAsStmt"]
    if name == "CreateStmt" and _temporary(tree.get("relation")):
        return [TEMP_TABLE]
    return [name]


def _temporary(relation: Any) -> bool:
    return isinstance(relation, dict) and relation.get("relpersistence") == "t"


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if node.get("@") == "A_Const":  # literals are values, not identifiers
            return
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _walk(item)


def _strings(items: Any) -> list[str]:
    return [str(item["sval"]) for item in _walk(items) if item.get("@") == "String" and "sval" in item]


def _collect(node: dict[str, Any], info: SqlInfo) -> None:
    kind = node.get("@")
    if kind in _MODIFYING:
        info.modifying.add(str(kind))
    if kind == "RangeVar" and "relname" in node:
        info.tables.add(str(node["relname"]).lower())
    elif kind == "ColumnDef" and "colname" in node:
        info.columns.add(str(node["colname"]).lower())
    elif kind in ("IndexElem", "AlterTableCmd") and "name" in node:
        info.columns.add(str(node["name"]).lower())
    elif kind == "ColumnRef":
        info.columns.update(name.lower() for name in _strings(node.get("fields", ())))
    elif kind == "Constraint":
        for key in ("keys", "fk_attrs", "pk_attrs", "including"):
            info.columns.update(name.lower() for name in _strings(node.get(key, ())))
    elif kind == "RenameStmt":
        for key in ("subname", "newname"):
            if key in node:
                info.columns.add(str(node[key]).lower())
    elif kind == "DropStmt" and _enum_name(node.get("removeType")) in ("OBJECT_TABLE", "OBJECT_VIEW"):
        for obj in node.get("objects", ()):
            names = _strings(obj)
            if names:
                info.tables.add(names[-1].lower())


def _enum_name(value: Any) -> str | None:
    return str(value.get("name")) if isinstance(value, dict) else None
