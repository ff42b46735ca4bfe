"""The process's finished trials, kept in memory for its scorers, so uploads can stay lean.

A Braintrust task returns and its scorers run in the same process, but everything the task puts
in `hooks.metadata` is uploaded with the root span and again in the input of every score span. So
the task registers the full record here and puts only a short trial key in metadata; the scorer
adapters look the key up. Each registration expects `readers` lookups (one per scorer) and is
dropped after the last, so a long run does not hold every record it ever made; `forget` drops
whatever is left (a scorer that never ran). The results store keeps the full record on disk.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

from harness.cases import Case
from harness.recording.records import TrialRecord


@dataclass
class _Entry:
    record: TrialRecord
    case: Case
    readers_left: int


_ENTRIES: dict[str, _Entry] = {}
_LOCK = threading.Lock()


def register(record: TrialRecord, case: Case, readers: int) -> str:
    """Keep `record` for `readers` lookups; return the key to carry in metadata."""
    key = f"{record.case_id}#{record.trial_index}:{secrets.token_hex(6)}"
    with _LOCK:
        _ENTRIES[key] = _Entry(record, case, max(1, readers))
    return key


def lookup(key: str) -> tuple[TrialRecord, Case] | None:
    """The record and case registered under `key` (counting one reader), or None if unknown here."""
    with _LOCK:
        entry = _ENTRIES.get(key)
        if entry is None:
            return None
        entry.readers_left -= 1
        if entry.readers_left <= 0:
            del _ENTRIES[key]
        return entry.record, entry.case


def forget(keys: list[str] | None = None) -> None:
    """Drop the given keys (or everything): records no scorer will read any more."""
    with _LOCK:
        for key in list(_ENTRIES) if keys is None else keys:
            _ENTRIES.pop(key, None)


def held() -> int:
    """How many records are still held (for tests and leak checks)."""
    with _LOCK:
        return len(_ENTRIES)
