"""Cleanup that survives cancellation: of the caller (a cancelled trial) and of the cleanup task
itself (asyncio.run cancels every task when Ctrl-C stops a run)."""

from __future__ import annotations

import asyncio

import pytest

from harness.servers.neon.sandbox import complete, failure, shielded


class Deleter:
    """A cleanup step that takes a while and counts how often it started and finished."""

    def __init__(self, seconds: float = 0.05, error: Exception | None = None) -> None:
        self.seconds, self.error = seconds, error
        self.started = self.finished = 0

    async def __call__(self) -> str:
        self.started += 1
        await asyncio.sleep(self.seconds)
        if self.error:
            raise self.error
        self.finished += 1
        return "deleted"


async def test_a_cancelled_caller_still_finishes_the_cleanup_then_sees_the_cancellation() -> None:
    deleter = Deleter()
    caller = asyncio.create_task(shielded(deleter))
    await asyncio.sleep(0.01)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert deleter.finished == 1


async def test_a_cleanup_task_cancelled_at_shutdown_is_started_again() -> None:
    deleter = Deleter()
    before = asyncio.all_tasks()
    outcome = asyncio.create_task(complete(deleter))
    await asyncio.sleep(0.01)
    # What asyncio.run does on Ctrl-C: cancel every task, the shielded cleanup task included
    # (only this test's tasks here: the event loop is shared with other tests' fixtures).
    mine = asyncio.all_tasks() - before  # the caller, the cleanup, and wait_for's inner task
    assert outcome in mine and len(mine) >= 2
    for task in mine:
        task.cancel()
    finished, caller_cancelled = await outcome
    assert (deleter.started, deleter.finished) == (2, 1)
    assert failure(finished) is None and finished.result() == "deleted"
    assert caller_cancelled  # a shutdown is under way: the caller must stop after cleaning up


async def test_a_failing_cleanup_reports_its_error_without_retrying() -> None:
    deleter = Deleter(error=RuntimeError("server said no"))
    finished, caller_cancelled = await complete(deleter)
    assert isinstance(failure(finished), RuntimeError) and not caller_cancelled
    assert deleter.started == 1
    with pytest.raises(RuntimeError, match="server said no"):
        await shielded(Deleter(error=RuntimeError("server said no")))
