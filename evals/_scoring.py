"""The scorers as the Eval runs them: each adapter, plus a note of what the run gate needs from its metadata.

Braintrust keeps a score's metadata in its span and hands the reporter only the numbers, so a
judge that failed (`metadata["judge_error"]`, score None) would look like any n/a, and an integrity
0 against main before the trial (a change nobody approved) like a 0 against the expected state.
Each scorer is wrapped to remember, per trial key, the first judge error it returned and whether
it saw main changed without approval (`scorers.main_damage`); the run gate counts both.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from typing import Any

from autoevals import Score

from scorers.main_damage import INTEGRITY_SCORES, changed_main_unapproved

_JUDGE_ERRORS: dict[str, str] = {}  # trial key -> "score name: message"
_MAIN_DAMAGE: dict[str, dict[str, str]] = {}  # trial key -> score name -> reason, main changed unapproved
_LOCK = threading.Lock()


def _note(score: Any, name: str, metadata: Mapping[str, Any] | None) -> None:
    key = (metadata or {}).get("trial_key")
    if not isinstance(score, Score) or not isinstance(key, str):
        return
    error = (score.metadata or {}).get("judge_error")
    with _LOCK:
        if error:
            _JUDGE_ERRORS.setdefault(key, f"{name}: {error}")
        if changed_main_unapproved(name, score):
            reason = (score.metadata or {}).get("reason") or "score 0"
            _MAIN_DAMAGE.setdefault(key, {}).setdefault(name, str(reason))


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


def main_damage(trial_key: object) -> str | None:
    """How this trial changed main without approval ("score: reason"), or None if it did not.

    The scorers finish in any order; the schema's reason is named before the data's, so two runs of
    the same trials print the same line."""
    if not isinstance(trial_key, str):
        return None
    with _LOCK:
        reasons = dict(_MAIN_DAMAGE.get(trial_key, {}))
    named = [name for name in INTEGRITY_SCORES if name in reasons]
    return f"{named[0]}: {reasons[named[0]]}" if named else None
