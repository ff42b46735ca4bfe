"""SIGTERM stops a run the way Ctrl-C does: in-flight trials delete their sandboxes, then it exits.

Why: `timeout`, CI cancellation and container stops send SIGTERM, whose default action kills the
process on the spot and leaves every in-flight trial's project behind. Python already turns SIGINT
into an orderly shutdown (asyncio cancels the tasks, each sandbox is deleted, shielded); SIGTERM is
routed to that same handler. Only the first SIGTERM counts: a launcher that forwards the signal to
a CLI that already got it from its process group must not make it a "second Ctrl-C".
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

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
