"""A tiny JSON-over-HTTP server on 127.0.0.1 for standing in for remote APIs in tests.

Remote services this sandbox cannot reach (Anthropic, an OpenAI-compatible judge) are replaced by
real HTTP servers that speak their wire protocol, so the code under test runs its real client
(SDK, retries, headers) end to end. Each route is a function of the parsed request.
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or None when the body is empty or not JSON
    query: dict[str, str] = field(default_factory=dict)  # last value of each parameter
    raw: bytes = b""  # the body as sent
    # Whether the client has closed its connection (a route holding its answer polls it: a client that
    # gave up on a request must not leave the server working on it).
    client_gone: Callable[[], bool] = field(default=lambda: False, repr=False)


@dataclass
class Response:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering (a server that closed it as it was reused)


Route = Callable[[Request], Response]


class JsonServer:
    """Serve `routes` (keyed by "METHOD /path") on a free loopback port; record every request."""

    def __init__(self, routes: dict[str, Route], fallback: Route | None = None, keep_alive: bool = False) -> None:
        """`fallback` answers what no route names (paths with ids in them); `keep_alive` speaks HTTP/1.1."""
        self.routes = routes
        self.fallback = fallback
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                parts = urlsplit(self.path)
                query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = Request(self.command, parts.path, headers, body, query, raw, self._client_gone)
                with server._lock:
                    server.requests.append(request)
                route = server.routes.get(f"{self.command} {parts.path}") or server.fallback
                response = route(request) if route else Response(404, {"error": f"no route {parts.path}"})
                if response.drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = json.dumps(response.body).encode()
                self.send_response(response.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in response.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client gave up (a timeout test): nothing left to answer

            def _client_gone(self) -> bool:
                connection: socket.socket = self.connection
                try:
                    readable, _, _ = select.select([connection], [], [], 0)
                    return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    return True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> JsonServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def serving(routes: dict[str, Route]) -> Iterator[JsonServer]:
    server = JsonServer(routes).start()
    try:
        yield server
    finally:
        server.stop()
