"""Requests a model server answered with an error, counted per model call.

Why: the SDKs retry 5xx and 429 answers themselves, so a turn's usage shows only the answer that
finally came back. A local server (llama-server) still spent, and counted on its /metrics, the
tokens of every attempt it failed (a tool call it could not parse is a 500 after the whole
generation); a hosted API does not bill them. The record keeps the count so the two reconcile and
a flaky endpoint shows in the results instead of hiding in the SDK.

    client = AsyncOpenAI(http_client=counting_http_client(DefaultAsyncHttpxClient))
    with failed_attempts() as failed:
        await client.chat.completions.create(...)
    failed.count  # error answers while the call ran
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx2


@dataclass
class FailedAttempts:
    count: int = 0


_CURRENT: ContextVar[FailedAttempts | None] = ContextVar("failed_attempts", default=None)


def is_failed_attempt(status: int) -> bool:
    """An answer the SDKs retry or give up on: the server's error, or its refusal for load."""
    return status >= 500 or status == 429


async def _count(response: httpx2.Response) -> None:
    box = _CURRENT.get()
    if box is not None and is_failed_attempt(response.status_code):
        box.count += 1


@contextmanager
def failed_attempts() -> Iterator[FailedAttempts]:
    """Count the error answers of the requests made in this context (this task's, not others')."""
    box = FailedAttempts()
    token = _CURRENT.set(box)
    try:
        yield box
    finally:
        _CURRENT.reset(token)


def counting_http_client(factory: Callable[..., Any]) -> Any:
    """The SDK's own default client (its timeouts and limits), with the counting hook added."""
    return factory(event_hooks={"response": [_count]})
