"""SQL over HTTP at ``POST /sql``, the protocol of ``@neondatabase/serverless``'s ``neon()`` driver.

What the driver sends (read in its published ``index.mjs``, version 1.0.0): a JSON body
``{"query": text, "params": [...]}``, or ``{"queries": [{"query", "params"}, ...]}`` for
``transaction([...])``; the headers ``Neon-Connection-String`` (the database URI, whose password
is the credential: no bearer token), ``Neon-Raw-Text-Output: true`` and ``Neon-Array-Mode: true``,
and for a batch ``Neon-Batch-Isolation-Level`` (``ReadUncommitted``, ``ReadCommitted``,
``RepeatableRead``, ``Serializable``), ``Neon-Batch-Read-Only`` and ``Neon-Batch-Deferrable``.
What it reads: ``{fields: [{name, dataTypeID, tableID, columnID, dataTypeSize, dataTypeModifier,
format}], rows, command, rowCount, rowAsArray}`` per query (a batch: ``{"results": [...]}``); on
HTTP 400 a JSON body with PostgreSQL's error fields (``message``, ``code``, ``severity``,
``detail``, ``hint``, ``position``, ``where``, ``constraint``, ...), any other status as text.

Each query runs with the extended protocol (one statement, ``$1`` parameters sent as text) on its
own connection as the project's role; a batch is one transaction, rolled back on the first error.
Values come back as PostgreSQL's text output, as Neon's proxy sends them with raw text output on.
Bounds, as Neon's proxy has them (``bounds`` holds the numbers): a body over the limit is HTTP 413
(``request is too large``), a response over it HTTP 507 (``response is too large``), read a row
at a time so it is never held whole; a body that is not UTF-8 or not JSON is a 400 naming why; a
request running past the statement bound is ended whatever the session set.
Only databases this localneon manages are served: the URI must name a project's role with that
role's password, and one of that project's branch databases. Checked in that order, as Neon's proxy
does (it authenticates the role at the endpoint, then the endpoint's server looks the database up):
a wrong role or password is ``password authentication failed for user '<user>'``, a database that is
not the project's ``database "<name>" does not exist`` (3D000), whether or not another project has
one of that name, so no answer tells which databases exist.
"""

from __future__ import annotations

import hmac
import json
import sys
import traceback
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo
from psycopg.pq.abc import PGconn, PGresult
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from localneon.engine import bounds, guards
from localneon.engine.branching import Neon
from localneon.engine.explain_options import without_neon_explain_options

ISOLATION_LEVELS = {
    "ReadUncommitted": "READ UNCOMMITTED",
    "ReadCommitted": "READ COMMITTED",
    "RepeatableRead": "REPEATABLE READ",
    "Serializable": "SERIALIZABLE",
}
# PostgreSQL's error fields under the names the driver copies onto its NeonDbError.
ERROR_FIELDS = {
    "severity": pq.DiagnosticField.SEVERITY,
    "code": pq.DiagnosticField.SQLSTATE,
    "detail": pq.DiagnosticField.MESSAGE_DETAIL,
    "hint": pq.DiagnosticField.MESSAGE_HINT,
    "position": pq.DiagnosticField.STATEMENT_POSITION,
    "internalPosition": pq.DiagnosticField.INTERNAL_POSITION,
    "internalQuery": pq.DiagnosticField.INTERNAL_QUERY,
    "where": pq.DiagnosticField.CONTEXT,
    "schema": pq.DiagnosticField.SCHEMA_NAME,
    "table": pq.DiagnosticField.TABLE_NAME,
    "column": pq.DiagnosticField.COLUMN_NAME,
    "dataType": pq.DiagnosticField.DATATYPE_NAME,
    "constraint": pq.DiagnosticField.CONSTRAINT_NAME,
    "file": pq.DiagnosticField.SOURCE_FILE,
    "line": pq.DiagnosticField.SOURCE_LINE,
    "routine": pq.DiagnosticField.SOURCE_FUNCTION,
}
# Text output turned into JSON values when the client asks for no raw text (Neon-Raw-Text-Output
# absent or false): booleans, small numbers and JSON; everything else (int8, numeric...) stays text.
_BOOL, _NUMBERS, _JSON = 16, {21, 23, 26, 700, 701}, {114, 3802}


class SqlHttpError(Exception):
    """A request answered with HTTP 400 and a PostgreSQL-shaped error body."""

    def __init__(self, message: str, code: str = "", *, status: int = 400, **fields: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"message": message, **({"code": code} if code else {}), **fields}


@dataclass
class SqlRequest:
    """One POST /sql, parsed: its queries and how to run and answer them."""

    queries: list[tuple[str, list[str | None]]]
    batch: bool
    array_mode: bool
    raw_text: bool
    begin: str = "BEGIN"
    size: int = 0  # bytes of rows read so far, for the response limit
    read_only: bool = False  # a Neon-Batch-Read-Only batch: run as the project's read-only role


def _flag(headers: Any, name: str) -> bool | None:
    value = headers.get(name)
    if value is None:
        return None
    if value.strip().lower() not in ("true", "false"):
        raise SqlHttpError(f"header {name} must be true or false, got {value!r}")
    return value.strip().lower() == "true"


def _param(value: Any, where: str) -> str | None:
    """A parameter as PostgreSQL text (the driver sends strings or null; other JSON is accepted too)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    raise SqlHttpError(f"{where}: unsupported parameter {value!r}")


def _query(item: Any, where: str) -> tuple[str, list[str | None]]:
    if not isinstance(item, dict) or not isinstance(item.get("query"), str):
        raise SqlHttpError(f'{where} must be an object with a "query" string')
    params = item.get("params") or []
    if not isinstance(params, list):
        raise SqlHttpError(f'{where}: "params" must be an array')
    values = [_param(p, f"{where} parameter ${i + 1}") for i, p in enumerate(params)]
    for text in (item["query"], *values):
        try:
            (text or "").encode()
        except UnicodeEncodeError as exc:  # JSON may escape a lone surrogate ("\\ud800"): no text has one
            raise SqlHttpError(f"{where} is not valid Unicode: {exc.reason} at character {exc.start}") from exc
    return item["query"], values


def parse_request(body: bytes, headers: Any) -> SqlRequest:
    """The queries and options of one request; bad input raises SqlHttpError naming what is wrong."""
    try:
        data = json.loads((body or b"null").decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SqlHttpError(f"request body is not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise SqlHttpError(f"request body is not valid JSON: {exc}") from exc
    if isinstance(data, dict) and "queries" in data:
        if not isinstance(data["queries"], list):
            raise SqlHttpError('"queries" must be an array of {"query", "params"} objects')
        queries = [_query(q, f"queries[{i}]") for i, q in enumerate(data["queries"])]
        batch = True
    else:
        queries, batch = [_query(data, "the request body")], False
    request = SqlRequest(
        queries,
        batch,
        array_mode=bool(_flag(headers, "Neon-Array-Mode")),
        raw_text=bool(_flag(headers, "Neon-Raw-Text-Output")),
    )
    level = headers.get("Neon-Batch-Isolation-Level")
    if level is not None and level not in ISOLATION_LEVELS:
        raise SqlHttpError(f"Neon-Batch-Isolation-Level must be one of {', '.join(ISOLATION_LEVELS)}, got {level!r}")
    read_only, deferrable = _flag(headers, "Neon-Batch-Read-Only"), _flag(headers, "Neon-Batch-Deferrable")
    modes = [f"ISOLATION LEVEL {ISOLATION_LEVELS[level]}"] if level else []
    modes += [] if read_only is None else ["READ ONLY" if read_only else "READ WRITE"]
    modes += [] if deferrable is None else ["DEFERRABLE" if deferrable else "NOT DEFERRABLE"]
    request.begin = " ".join(["BEGIN", ", ".join(modes)]).strip()
    request.read_only = batch and bool(read_only)
    return request


def resolve_conninfo(neon: Neon, connection_string: str | None, *, read_only: bool = False) -> str:
    """The libpq conninfo for a ``Neon-Connection-String``, refused unless it names a database of
    this server's catalog, as its project's role, with that role's password.

    ``read_only``: as the project's read-only companion instead (``guards``). A batch's READ ONLY
    transaction alone is one ``{"query": "COMMIT"}`` away from writing (on Neon's proxy too), and
    Neon's own MCP server sends ``run_sql_transaction`` under a read-only grant as such a batch."""
    if not connection_string:
        raise SqlHttpError("missing Neon-Connection-String header: send the database's postgresql:// URI")
    parts = urlsplit(connection_string)
    if parts.scheme not in ("postgres", "postgresql") or not parts.username or not parts.path.strip("/"):
        raise SqlHttpError("Neon-Connection-String must be postgresql://user:password@host:port/dbname")
    cluster = neon.cluster
    allowed_hosts = {cluster.public_host, "localhost", "127.0.0.1"}
    if parts.hostname and parts.hostname not in allowed_hosts:
        raise SqlHttpError(f"host {parts.hostname!r} is not this localneon's PostgreSQL ({cluster.public_host})")
    if parts.port is not None and cluster.tcp_port is not None and parts.port != cluster.tcp_port:
        raise SqlHttpError(f"port {parts.port} is not this localneon's PostgreSQL (port {cluster.tcp_port})")
    user, password = unquote(parts.username), unquote(parts.password or "")
    pg_name = unquote(parts.path.strip("/"))
    with neon.catalog.connect() as conn:
        project = conn.execute("SELECT id, role_password FROM projects WHERE role_name = %s", (user,)).fetchone()
        authentic = project is not None and hmac.compare_digest(
            password.encode(), str(project["role_password"]).encode()
        )
        row = None
        if project is not None and authentic:
            row = conn.execute(
                "SELECT b.id AS branch_id, d.name FROM databases d JOIN branches b ON b.id = d.branch_id "
                "WHERE d.pg_name = %s AND b.project_id = %s",
                (pg_name, project["id"]),
            ).fetchone()
    if project is None or not authentic:  # Neon's proxy's words (proxy/src/auth/mod.rs)
        raise SqlHttpError(f"password authentication failed for user '{user}'", "28P01", severity="FATAL")
    if row is None:  # PostgreSQL's words, for a name no project has and another project's alike
        raise SqlHttpError(f'database "{pg_name}" does not exist', "3D000", severity="FATAL")
    if read_only:
        conninfo = neon.readonly_conninfo(neon.target(str(project["id"]), row["branch_id"], row["name"]))
    else:
        conninfo = cluster.conninfo(pg_name, user=user, password=password)
    return make_conninfo(conninfo, options=f"-c statement_timeout={bounds.statement_timeout_ms()}", connect_timeout=15)


def _error(result: PGresult | None, conn: PGconn) -> SqlHttpError:
    if result is None:
        return SqlHttpError(conn.get_error_message() or "the query returned no result")
    message = (result.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode(errors="replace")
    fields = {}
    for name, code in ERROR_FIELDS.items():
        value = result.error_field(code)
        if value is not None:
            fields[name] = value.decode(errors="replace")
    error = SqlHttpError(message or result.get_error_message())
    error.body.update(fields)
    return error


def _value(raw: bytes | None, type_oid: int, raw_text: bool) -> Any:
    if raw is None:
        return None
    text = raw.decode()
    if raw_text:
        return text
    if type_oid == _BOOL:
        return text == "t"
    if type_oid in _NUMBERS:
        number = float(text)
        return int(number) if number.is_integer() and type_oid not in (700, 701) else number
    if type_oid in _JSON:
        return json.loads(text)
    return text


def _result_json(result: PGresult, rows: list[Any], request: SqlRequest) -> dict[str, Any]:
    """One query's answer: ``rows`` (already shaped) and the fields and status of its last result."""
    fields: list[dict[str, Any]] = [
        {
            "name": (result.fname(i) or b"").decode(),
            "dataTypeID": result.ftype(i),
            "tableID": result.ftable(i),
            "columnID": result.ftablecol(i),
            "dataTypeSize": result.fsize(i),
            "dataTypeModifier": result.fmod(i),
            "format": "text",
        }
        for i in range(result.nfields)
    ]
    if not request.array_mode:
        rows = [{f["name"]: v for f, v in zip(fields, values, strict=True)} for values in rows]
    status = (result.command_status or b"").decode()
    return {
        "command": status.split(" ", 1)[0],
        "rowCount": result.command_tuples,
        "rows": rows,
        "fields": fields,
        "rowAsArray": request.array_mode,
    }


_OK = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK, pq.ExecStatus.EMPTY_QUERY)


def _bound_error(dog: bounds.Watchdog) -> SqlHttpError:
    error = dog.error()
    return SqlHttpError(str(error), error.sqlstate or "57014", severity="ERROR")


def _run(
    conn: psycopg.Connection[Any], dog: bounds.Watchdog, text: str, params: list[str | None] | None, request: SqlRequest
) -> dict[str, Any]:
    """One query, its rows read one at a time; refused (HTTP 507, as Neon's proxy answers) once the
    response would pass ``bounds.MAX_RESULT_BYTES``, counted over the whole request."""
    pgconn = conn.pgconn
    if params is None:  # the twin's own BEGIN and COMMIT
        bounds.send(pgconn, dog, text.encode())
    else:
        encoded = [p.encode() if p is not None else None for p in params]
        bounds.send(pgconn, dog, without_neon_explain_options(text).encode(), encoded)
    rows: list[Any] = []
    last: PGresult | None = None
    error: SqlHttpError | None = None
    for result in bounds.results(pgconn, dog):
        if result.status == pq.ExecStatus.SINGLE_TUPLE:
            raw = [result.get_value(0, c) for c in range(result.nfields)]
            request.size += sum(len(v) for v in raw if v is not None) + 8 * result.nfields
            if request.size > bounds.MAX_RESULT_BYTES:
                raise SqlHttpError(f"response is too large (max is {bounds.MAX_RESULT_BYTES} bytes)", status=507)
            rows.append([_value(v, result.ftype(c), request.raw_text) for c, v in enumerate(raw)])
        elif bounds.is_copy(result):
            error = error or SqlHttpError(
                "COPY is not available over /sql: use INSERT, or a PostgreSQL client over TCP"
            )
        elif result.status in _OK:
            last = result
        else:
            error = error or (_bound_error(dog) if dog.fired else _error(result, pgconn))
    if error is not None:
        raise error
    if last is None:
        raise _bound_error(dog) if dog.fired else SqlHttpError("the query returned no result")
    return _result_json(last, rows, request)


def execute(conninfo: str, request: SqlRequest) -> dict[str, Any]:
    """Run the request's queries (a batch in one transaction: a failure closes the connection, and
    PostgreSQL rolls it back); the response body. The call is bound as ``bounds`` says."""
    try:
        conn = psycopg.connect(conninfo, autocommit=True)
    except psycopg.OperationalError as exc:
        raise SqlHttpError(str(exc).strip() or "could not connect", "08006") from exc
    with conn:
        dog = bounds.Watchdog(conn, conninfo)
        try:
            if not request.batch:
                query, params = request.queries[0]
                return _run(conn, dog, query, params, request)
            # A read-only batch reads first, so its mode is fixed, and stays in a READ ONLY transaction
            # whatever its queries end (guards.keep_read_only).
            begin = f"{request.begin}; SELECT 1" if request.read_only else request.begin

            def internal(text: str) -> object:
                return _run(conn, dog, text, None, request)

            internal(begin)
            results = []
            for query, params in request.queries:
                results.append(_run(conn, dog, query, params, request))
                if request.read_only:
                    guards.keep_read_only(conn.pgconn, [str(results[-1]["command"])], internal, begin)
            _run(conn, dog, "COMMIT", None, request)
            return {"results": results}
        except psycopg.Error as exc:  # the connection was lost (or ended by the watchdog)
            raise (_bound_error(dog) if dog.fired else SqlHttpError(str(exc).strip(), "08006")) from exc
        finally:
            dog.close()


async def read_bounded(request: Request, limit: int) -> bytes | None:
    """The body, read in chunks; None once it passes ``limit`` (a 100 MB body is never held whole)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def sql_endpoint(neon: Neon) -> Any:
    """The Starlette handler for ``POST /sql`` on ``neon``'s cluster."""

    async def handle(request: Request) -> Response:
        limit = bounds.MAX_SQL_BODY_BYTES
        body = await read_bounded(request, limit)
        if body is None:  # Neon's proxy: "request is too large (max is N bytes)", HTTP 413
            message = f"request is too large (max is {limit} bytes; LOCALNEON_MAX_SQL_BODY_BYTES)"
            return JSONResponse({"message": message}, status_code=413)

        def work() -> dict[str, Any]:
            parsed = parse_request(body, request.headers)
            uri = request.headers.get("Neon-Connection-String")
            return execute(resolve_conninfo(neon, uri, read_only=parsed.read_only), parsed)

        try:
            return JSONResponse(await run_in_threadpool(work))
        except SqlHttpError as exc:
            return JSONResponse(exc.body, status_code=exc.status)
        except Exception as exc:  # a bug or an unreachable catalog: the reason, not a bare 500 page
            traceback.print_exc(file=sys.stderr)
            return JSONResponse({"message": f"{type(exc).__name__}: {str(exc).strip()}"}, status_code=500)

    return handle
