"""One ASGI app: MCP Streamable HTTP at ``/mcp``, the REST API at ``/api/v2``, SQL over HTTP at
``/sql`` (Neon's ``neon()`` driver protocol), ``/healthz``.

Bearer-token auth guards ``/mcp`` and ``/api/v2`` when a token is configured; ``/sql`` is
authenticated by the database password in its connection string, as on Neon; ``/healthz`` stays
open so launchers can poll readiness.
"""

from __future__ import annotations

import hmac
import json
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from localneon.engine.branching import Neon
from localneon.engine.gc import collect_and_report
from localneon.mcp.server import Settings, build_server, sweep_expired_branches
from localneon.rest.routes import mount as rest_routes
from localneon.sql_http.endpoint import sql_endpoint

PROTECTED_PREFIXES = ("/mcp", "/api/v2")


class ClusterWatch:
    """Before each request, a PostgreSQL that died under the server (SIGKILL, the OOM killer) is
    started again, so the request, and every later one, finds it up.

    Why: Neon restarts a compute that crashed; without this a killed postmaster failed every later
    call, the trials' own clean-up included, so a run whose PostgreSQL was killed left its projects,
    databases and roles behind for the janitor. The check is a small file and /proc; the restart
    runs once, in a worker thread, whatever the number of requests waiting on it, and is followed by
    the collection of what the killed creations left half made. A request in flight at the kill
    still fails (its trial is an infrastructure error)."""

    def __init__(self, app: ASGIApp, neon: Neon) -> None:
        self.app = app
        self.neon = neon
        self.reviving = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.neon.cluster_running():
            await anyio.to_thread.run_sync(self._revive)
        await self.app(scope, receive, send)

    def _revive(self) -> None:
        with self.reviving:  # the first waiting request restarts it; the others find it up
            try:
                if self.neon.revive_cluster():
                    collect_and_report(self.neon)
            except Exception as error:  # the request then fails as it would have, naming the cluster
                print(f"localneon: could not start PostgreSQL again: {error}", file=sys.stderr, flush=True)


class BearerAuth:
    """Rejects requests to protected paths without ``Authorization: Bearer <token>`` (401)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token and scope["type"] == "http" and str(scope.get("path", "")).startswith(PROTECTED_PREFIXES):
            header = ""
            for key, value in scope.get("headers", []):
                if key == b"authorization":
                    header = value.decode("latin-1")
            scheme, _, supplied = header.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(supplied.strip(), self.token):
                body = json.dumps({"code": "", "message": "authentication required: missing or invalid bearer token"})
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body.encode()})
                return
        await self.app(scope, receive, send)


def _security(host: str) -> TransportSecuritySettings:
    if host in ("127.0.0.1", "localhost", "::1"):
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def build_app(neon: Neon, settings: Settings, *, token: str | None = None, host: str = "127.0.0.1") -> ASGIApp:
    """The whole HTTP surface for one ``Neon``."""
    server = build_server(neon, settings)
    manager = StreamableHTTPSessionManager(app=server, security_settings=_security(host))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def not_found(request: Request, exc: Any) -> Response:
        return JSONResponse({"code": "", "message": f"no route for {request.method} {request.url.path}"}, 404)

    async def wrong_method(request: Request, exc: Any) -> Response:
        # Neon's error body rather than Starlette's bare text, so a client says which call was refused.
        # (No Allow header: each method is its own route, so Starlette's would name only the first.)
        return JSONResponse({"code": "", "message": f"{request.method} is not served for {request.url.path}"}, 405)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run(), anyio.create_task_group() as tg:
            tg.start_soon(sweep_expired_branches, neon)
            yield
            tg.cancel_scope.cancel()
        # A creation cut off by this stop leaves a database or role the catalog never heard of: drop it now.
        await anyio.to_thread.run_sync(collect_and_report, neon)

    app = Starlette(
        routes=[
            Route("/healthz", health, methods=["GET"]),
            Route("/mcp", StreamableHTTPASGIApp(manager)),
            Route("/sql", sql_endpoint(neon), methods=["POST"]),
            Mount("/api/v2", routes=rest_routes(neon)),
        ],
        exception_handlers={404: not_found, 405: wrong_method},
        lifespan=lifespan,
    )
    return BearerAuth(ClusterWatch(app, neon), token)
