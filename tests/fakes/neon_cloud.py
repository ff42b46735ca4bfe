"""A stand-in for Neon's cloud: its REST API v2 and its MCP endpoint, on 127.0.0.1, recording.

Why a stand-in and not the local server alone: the rules the harness must follow on Neon's cloud
are the cloud's, not ours. This server adds them in front of a real local server (real projects,
branches and PostgreSQL behind it) and keeps the evidence a test needs:
- every request must carry the account's API key (`Authorization: Bearer`), like Neon;
- with `org_id` set, `GET /projects` and `POST /projects` without it answer 400
  "org_id is required ..." (an organization-scoped account, as Neon answers);
- with `refuse_expires_at`, a branch created with `expires_at` is refused (an account without the
  early-access feature), and nothing is created;
- MCP clients are recorded per project (`projectId` in the MCP URL, as Neon's server reads its
  grant), each known by the trial it names (`X-Eval-Trial`: MCP 2026-07 is stateless, so there is
  no session id, and a connection's port says nothing since a client opens several). A pool trial
  starts by restoring main; from one restore to the next, a project must hear from one trial only.
  A second trial in the same stretch, or a trial still talking after main was restored under it,
  is an *overlap*: two trials holding one project;
- deletions are recorded, so a test can show that foreign projects and branches were never touched.
MCP is forwarded byte for byte (Streamable HTTP, SSE streams included).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

ORG_ID_REQUIRED = "org_id is required, you can find it on your organization settings page"
EXPIRES_AT_REFUSED = "branch expiration (expires_at) is not available for this account"
HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "authorization", "keep-alive"}


@dataclass
class Recorded:
    """One request the stand-in answered."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    body: Any = None


@dataclass
class SessionLog:
    """MCP clients per project and the overlaps seen."""

    holder: dict[str, str | None] = field(default_factory=dict)  # project id -> client since the last restore
    retired: dict[str, set[str]] = field(default_factory=dict)  # project id -> clients whose main was restored
    opened: dict[str, int] = field(default_factory=dict)  # project id -> distinct clients seen
    unpinned: int = 0  # MCP requests without projectId
    overlaps: list[str] = field(default_factory=list)


class NeonCloud:
    """Serve `/api/v2/*` and `/mcp` for an account with `api_key`, in front of a local server."""

    def __init__(
        self,
        upstream_api: str,
        upstream_mcp: str,
        upstream_token: str | None,
        api_key: str,
        *,
        org_id: str | None = None,
        refuse_expires_at: bool = False,
    ) -> None:
        self.upstream_api = upstream_api.rstrip("/")
        self.upstream_mcp = upstream_mcp
        self.upstream_token = upstream_token
        self.api_key = api_key
        self.org_id = org_id
        self.refuse_expires_at = refuse_expires_at
        self.requests: list[Recorded] = []
        self.sessions = SessionLog()
        self._lock = threading.Lock()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        app = Starlette(
            routes=[
                Route("/api/v2/{path:path}", self._api, methods=["GET", "POST", "DELETE", "PATCH", "PUT"]),
                Route("/mcp", self._mcp, methods=["GET", "POST", "DELETE"]),
            ]
        )
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_keep_alive=600)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)

    # -- where it answers ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return self.url + "/api/v2"

    @property
    def mcp_url(self) -> str:
        return self.url + "/mcp"

    def start(self) -> NeonCloud:
        self._thread.start()
        for _ in range(400):
            if self._server.started:
                return self
            threading.Event().wait(0.025)
        raise RuntimeError("the Neon stand-in did not start")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    # -- what it saw ---------------------------------------------------------------------------

    def deleted(self) -> list[str]:
        """Paths of every successful DELETE: `projects/<id>` or `projects/<id>/branches/<id>`."""
        return [r.path for r in self.requests if r.method == "DELETE" and r.status < 300]

    def calls(self, method: str, suffix: str = "") -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path.endswith(suffix)]

    # -- REST ----------------------------------------------------------------------------------

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.api_key}"

    def _record(self, request: Request, path: str, status: int, body: Any = None) -> None:
        with self._lock:
            self.requests.append(Recorded(request.method, path, dict(request.query_params), status, body))

    async def _api(self, request: Request) -> Response:
        path = request.path_params["path"].strip("/")
        raw = await request.body()
        body: Any = json.loads(raw) if raw else None
        refusal = self._refusal(request, path, body)
        if refusal is not None:
            self._record(request, path, refusal.status_code, body)
            return refusal
        if path.endswith("/restore") and request.method == "POST":
            self._restoring(path.split("/")[1])
        params = dict(request.query_params)
        headers = {"Authorization": f"Bearer {self.upstream_token}"} if self.upstream_token else {}
        async with httpx.AsyncClient(timeout=120) as client:
            upstream = await client.request(
                request.method, f"{self.upstream_api}/{path}", params=params, json=body, headers=headers
            )
        self._record(request, path, upstream.status_code, body)
        content_type = upstream.headers.get("content-type", "application/json")
        return Response(upstream.content, status_code=upstream.status_code, media_type=content_type)

    def _refusal(self, request: Request, path: str, body: Any) -> Response | None:
        if not self._authorized(request):
            return JSONResponse({"code": "", "message": "authentication required"}, status_code=401)
        if self.org_id is not None and path == "projects":
            given = request.query_params.get("org_id")
            if request.method == "POST" and isinstance(body, dict):
                given = (body.get("project") or {}).get("org_id") or given
            if given != self.org_id:
                return JSONResponse({"code": "", "message": ORG_ID_REQUIRED}, status_code=400)
        branch = body.get("branch") if isinstance(body, dict) else None
        if (
            self.refuse_expires_at
            and request.method == "POST"
            and path.endswith("/branches")
            and isinstance(branch, dict)
            and "expires_at" in branch
        ):
            return JSONResponse({"code": "", "message": EXPIRES_AT_REFUSED}, status_code=400)
        return None

    def _restoring(self, project_id: str) -> None:
        """A trial starts on `project_id`: whoever talked to it before is done with it."""
        with self._lock:
            previous = self.sessions.holder.get(project_id)
            if previous is not None:
                self.sessions.retired.setdefault(project_id, set()).add(previous)
            self.sessions.holder[project_id] = None

    # -- MCP -----------------------------------------------------------------------------------

    async def _mcp(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse({"code": "", "message": "authentication required"}, status_code=401)
        project = request.query_params.get("projectId")
        self._heard(project, request.headers.get("x-eval-trial") or "?")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        if self.upstream_token:
            headers["Authorization"] = f"Bearer {self.upstream_token}"
        client = httpx.AsyncClient(timeout=None)
        upstream_request = client.build_request(
            request.method,
            self.upstream_mcp,
            params=request.query_params,
            content=await request.body(),
            headers=headers,
        )
        upstream = await client.send(upstream_request, stream=True)
        self._record(request, "mcp", upstream.status_code)
        passed = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS | {"content-encoding"}}

        async def close() -> None:
            await upstream.aclose()
            await client.aclose()

        return StreamingResponse(
            _chunks(upstream), status_code=upstream.status_code, headers=passed, background=BackgroundTask(close)
        )

    def _heard(self, project: str | None, client: str) -> None:
        with self._lock:
            log = self.sessions
            if project is None:
                log.unpinned += 1
                return
            if project not in log.holder:  # never restored: no trial has started on it (a tool-count probe)
                log.opened[project] = log.opened.get(project, 0) + 1
                return
            if client in log.retired.get(project, set()):
                log.overlaps.append(f"{project}: trial {client} still talking after main was restored under it")
            holder = log.holder.get(project)
            if holder is None:
                log.holder[project] = client
                log.opened[project] = log.opened.get(project, 0) + 1
            elif holder != client:
                log.overlaps.append(f"{project}: trials {holder} and {client} in one trial's stretch")


async def _chunks(upstream: httpx.Response) -> AsyncIterator[bytes]:
    with contextlib.suppress(httpx.HTTPError, asyncio.CancelledError):
        async for chunk in upstream.aiter_raw():
            yield chunk


@contextlib.contextmanager
def neon_cloud(
    upstream_api: str, upstream_mcp: str, upstream_token: str | None, api_key: str, **options: Any
) -> Iterator[NeonCloud]:
    """A running stand-in, stopped on exit."""
    cloud = NeonCloud(upstream_api, upstream_mcp, upstream_token, api_key, **options).start()
    try:
        yield cloud
    finally:
        cloud.stop()
