"""Real llama-server answers, replayed over HTTP on 127.0.0.1: a local model without the model.

The recordings in tests/data/llama/ are raw exchanges with llama.cpp's `llama-server` (made by
`python -m localmodel record`, see that folder's README): `{"made_by", "request": {method, path,
body}, "response": {status, body}}`. This server answers with them, so the real openai and
anthropic SDKs meet exactly what the real server said (a tool call, a call written as text, a
context overflow 400, a `length` finish, cached-token usage, `/props`).

    with LlamaReplay(chat=["openai_tool_call", "openai_context_overflow"]) as server:
        OpenAICompatProvider("smollm2", "local", base_url=server.openai_url)

`chat` and `messages` list the recordings POST /v1/chat/completions and POST /v1/messages answer,
in order (a request past the end gets llama-server's 400 `invalid_request_error` naming it, which
no SDK retries); an entry may be a `(status, body)` pair derived from a recording (`answer(name)`
with one field changed, said so in the test), or a function of the request body returning one (to
name the trial's own project in a recorded call). `hold_s` holds every answer back that long while
watching the connection: a client that gives up is counted in `abandoned`, and the server stops
working on its request, as llama-server does; `peak` is the most requests in flight at once (queued ones included).
`slots=1` works on one request at a time, the others wait in the server's queue (llama-server with
`--parallel 1`, what a trial whose client sent too many requests at once meets).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.fakes.jsonserver import JsonServer, Request, Response, Route

RECORDINGS = Path(__file__).resolve().parent.parent / "data" / "llama"
CHAT, MESSAGES = "/v1/chat/completions", "/v1/messages"
Entry = str | tuple[int, Any] | Callable[[Any], tuple[int, Any]]


def recording(name: str) -> dict[str, Any]:
    """One recorded exchange, by file name without `.json`."""
    data: dict[str, Any] = json.loads((RECORDINGS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def answer(name: str) -> tuple[int, Any]:
    """The recorded response's status and body."""
    response = recording(name)["response"]
    return int(response["status"]), response["body"]


def request_body(name: str) -> Any:
    """The recorded request's body (what was sent to get the answer)."""
    return recording(name)["request"]["body"]


def _recorded(name: str) -> Route:
    """A route answering one recording, whatever the request."""
    return lambda request: Response(*answer(name))


class LlamaReplay:
    """Serve recorded answers on the routes llama-server serves."""

    def __init__(
        self,
        chat: list[Entry] | None = None,
        messages: list[Entry] | None = None,
        props: str | None = "props",
        models: str | None = "v1_models",
        hold_s: float = 0.0,
        slots: int | None = None,
    ) -> None:
        self.scripts = {CHAT: list(chat or []), MESSAGES: list(messages or [])}
        self.hold_s = hold_s
        self._slots = threading.Semaphore(slots) if slots else None
        self.abandoned = 0
        self.peak = 0
        self._running = 0
        self._served = {CHAT: 0, MESSAGES: 0}
        self._lock = threading.Lock()
        routes: dict[str, Route] = {f"POST {path}": self._complete for path in (CHAT, MESSAGES)}
        for path, name in (("/props", props), ("/v1/models", models)):
            if name is not None:
                routes[f"GET {path}"] = _recorded(name)
        self._server = JsonServer(routes)

    @property
    def url(self) -> str:
        """The server's root (ANTHROPIC_BASE_URL; `/props` lives here)."""
        return self._server.url

    @property
    def openai_url(self) -> str:
        """OPENAI_BASE_URL for the openai SDK."""
        return f"{self._server.url}/v1"

    def bodies(self, path: str = CHAT) -> list[Any]:
        return [request.body for request in self._server.requests if request.path == path]

    def _complete(self, request: Request) -> Response:
        with self._lock:  # in flight from arrival: queued for a slot counts
            self._running += 1
            self.peak = max(self.peak, self._running)
        try:
            return self._queue(request)
        finally:
            with self._lock:
                self._running -= 1

    def _queue(self, request: Request) -> Response:
        if self._slots is None:
            return self._work(request)
        while not self._slots.acquire(timeout=0.01):  # queued, as llama-server queues a task for a free slot
            if request.client_gone():
                with self._lock:
                    self.abandoned += 1
                return Response(499, {"error": {"message": "client closed the request"}})
        try:
            return self._work(request)
        finally:
            self._slots.release()

    def _work(self, request: Request) -> Response:
        with self._lock:
            index = self._served[request.path]
            self._served[request.path] += 1
        deadline = time.monotonic() + self.hold_s
        while time.monotonic() < deadline:
            if request.client_gone():
                with self._lock:
                    self.abandoned += 1
                return Response(499, {"error": {"message": "client closed the request"}})
            time.sleep(0.01)
        script = self.scripts[request.path]
        if index >= len(script):
            message = f"replay exhausted: request {index + 1} on {request.path}"
            return Response(400, {"error": {"code": 400, "message": message, "type": "invalid_request_error"}})
        entry = script[index]
        if isinstance(entry, str):
            return Response(*answer(entry))
        return Response(*(entry(request.body) if callable(entry) else entry))

    def start(self) -> LlamaReplay:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> LlamaReplay:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
