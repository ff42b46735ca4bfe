"""The scorers as the Eval runs them: each adapter, plus a note of every judge failure it reports.

Braintrust keeps a score's metadata in its span and hands the reporter only the numbers, so a
judge that failed (`metadata["judge_error"]`, score None) would look like any n/a. Each scorer is
wrapped to remember, per trial key, the first judge error it returned; the run gate counts them.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from typing import Any

from autoevals import Score

_JUDGE_ERRORS: dict[str, str] = {}  # trial key -> "score name: message"
_LOCK = threading.Lock()


def _note(score: Any, name: str, metadata: Mapping[str, Any] | None) -> None:
    error = (score.metadata or {}).get("judge_error") if isinstance(score, Score) else None
    key = (metadata or {}).get("trial_key")
    if error and isinstance(key, str):
        with _LOCK:
            _JUDGE_ERRORS.setdefault(key, f"{name}: {error}")


def observed(scorer: Callable[..., Any]) -> Callable[..., Any]:
    """`scorer` under the same name, noting judge errors in what it returns."""
    name = scorer.__name__
    if inspect.iscoroutinefunction(scorer):

        async def run_async(metadata: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
            score = await scorer(metadata=metadata, **kwargs)
            _note(score, name, metadata)
            return score

        wrapper: Callable[..., Any] = run_async
    else:

        def run_sync(metadata: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
            score = scorer(metadata=metadata, **kwargs)
            _note(score, name, metadata)
            return score

        wrapper = run_sync
    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


def judge_error(trial_key: object) -> str | None:
    """The judge error noted for this trial, if any."""
    if not isinstance(trial_key, str):
        return None
    with _LOCK:
        return _JUDGE_ERRORS.get(trial_key)
