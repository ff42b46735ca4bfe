"""SIGTERM stops a run the way Ctrl-C does: in-flight trials delete their sandboxes, then it exits.

Why: `timeout`, CI cancellation and container stops send SIGTERM, whose default action kills the
process on the spot and leaves every in-flight trial's project behind. Python already turns SIGINT
into an orderly shutdown (asyncio cancels the tasks, each sandbox is deleted, shielded); SIGTERM is
routed to that same handler. Only the first SIGTERM counts: a launcher that forwards the signal to
a CLI that already got it from its process group must not make it a "second Ctrl-C".

While a sandbox is being deleted (`cleanup_guard`), Ctrl-C is held, not lost: asyncio turns a
second press into a KeyboardInterrupt raised out of the event loop, which would abandon every
deletion in flight (an impatient user pressing three times left six projects behind). The press is
delivered as soon as no deletion is running.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_installed: list[bool] = []


def sigterm_like_sigint() -> None:
    """Route SIGTERM to whatever handles SIGINT right now (once per process; main thread only)."""
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    received: list[int] = []

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        if received:
            return
        received.append(signum)
        print("harness: SIGTERM: stopping as on Ctrl-C, deleting in-flight sandboxes", file=sys.stderr, flush=True)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        elif handler == signal.SIG_DFL:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    _installed.append(True)


_active_cleanups: list[int] = [0]
_held: list[int] = []
_previous: list[Any] = []  # the SIGINT handler replaced while cleanups run (asyncio's, usually)


def _holding(signum: int, frame: FrameType | None) -> None:
    """SIGINT while a deletion runs: held, delivered once none runs."""
    if not _held:
        print("harness: interrupt held until the sandboxes being deleted are gone", file=sys.stderr, flush=True)
    _held.append(signum)


@contextmanager
def cleanup_guard() -> Iterator[None]:
    """Hold Ctrl-C while the enclosed cleanup (and any other running) goes on; then put the handler back
    and deliver a held press, from the event loop, as a press between two callbacks would be."""
    main = threading.current_thread() is threading.main_thread()
    if main and _active_cleanups[0] == 0:
        current = signal.getsignal(signal.SIGINT)
        if callable(current) and current is not _holding:
            _previous[:] = [current]
            signal.signal(signal.SIGINT, _holding)
    _active_cleanups[0] += 1
    try:
        yield
    finally:
        _active_cleanups[0] -= 1
        if main and _active_cleanups[0] == 0 and _previous:
            if signal.getsignal(signal.SIGINT) is _holding:
                signal.signal(signal.SIGINT, _previous[0])
            _previous.clear()
            if _held:
                _held.clear()
                try:
                    asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)
                except RuntimeError:
                    os.kill(os.getpid(), signal.SIGINT)
