"""An HTTP server on 127.0.0.1 that answers 404 to every request: a REST API at the wrong address,
or a web app (a Next.js build of Neon's server) where the harness might guess an API. With another
status (`refusing_server`): an MCP server that refuses the key it is sent (401)."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator


def _handler(body: bytes, content_type: str, status: int = 404) -> type[http.server.BaseHTTPRequestHandler]:
    class NotFound(http.server.BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

        def log_message(self, format: str, *args: object) -> None:
            return None

    return NotFound


@contextlib.contextmanager
def not_found_server(
    body: bytes = b'{"message": "not found"}', content_type: str = "application/json"
) -> Iterator[str]:
    """Serve 404 with `body` for everything while the block runs; yields the server's origin."""
    with refusing_server(404, body, content_type) as origin:
        yield origin


@contextlib.contextmanager
def refusing_server(
    status: int, body: bytes = b'{"message": "refused"}', content_type: str = "application/json"
) -> Iterator[str]:
    """Serve `status` with `body` for everything while the block runs; yields the server's origin."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(body, content_type, status))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


HTML_404 = b"<!DOCTYPE html><html><body>404: This page could not be found.</body></html>"
