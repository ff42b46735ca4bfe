"""The process environment, read once, and the settings of this machine that no trial record carries.

Why one snapshot: a setting read in many places can be read at different moments (before and after
a module wrote the variable for another to see), and its default restated differently in each. So
the environment is read once per process, the first time a setting is asked for (`process_env()`),
and every settings object takes its values from that snapshot, or from a mapping it is given; no
other module reads `os.environ` (`tests/test_architecture.py` checks). The settings modules are this
one, `harness/config.py` (`Settings`: what a trial needs, carried on every record), `braintrust_run/settings.py`
(`EvalSettings`: what a run of the evals needs) and `harness/servers/neon/worn_surface.py` (which
surface the local twin wears). Each default is one constant, here or beside its setting.

`HostSettings` are where things are on this machine: the results folder, the case dataset, the local
server's PostgreSQL. Read from the snapshot, as the environment has them (`.env` is not read here:
the launchers put it into their children's environment, and `Settings.from_env` layers it itself).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Generic, TypeVar

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS_DIR = Path("results")  # EVAL_RESULTS_DIR: one folder per run under it
DEFAULT_DATASET = REPO_ROOT / "datasets" / "cases"  # EVAL_DATASET: the bundled cases
DEFAULT_PGDATA = REPO_ROOT / ".localneon" / "pgdata"  # LOCALNEON_PGDATA: the local server's own default
DEFAULT_NPM_CACHE = REPO_ROOT / ".neon-npm"  # EVAL_NPM_CACHE: gitignored, like .venv

_SNAPSHOT: list[Mapping[str, str]] = []


def process_env() -> Mapping[str, str]:
    """The process environment as it was when a setting was first asked for (read-only, never re-read)."""
    if not _SNAPSHOT:
        _SNAPSHOT.append(MappingProxyType(dict(os.environ)))
    return _SNAPSHOT[0]


def forget_process_env() -> None:
    """Read the environment again on next use (every settings object read from it follows): for tests
    that change the environment, never for a run."""
    _SNAPSHOT.clear()


def positive_seconds(env: Mapping[str, str], variable: str, default: float) -> float:
    """`variable` of `env` as seconds above 0 (`default` when unset); anything else is a ValueError
    naming the variable, so a bad value stops a run before its first step."""
    text = env.get(variable, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{variable}={text!r} is not a number of seconds above 0 (default {default:g})")
    return value


def _text(env: Mapping[str, str], name: str) -> str | None:
    """The variable as set, or None when it is unset or empty (its value is not stripped)."""
    return env.get(name) or None


@dataclass(frozen=True)
class HostSettings:
    """Where things are on this machine, outside any trial's record."""

    results_dir: Path = DEFAULT_RESULTS_DIR  # EVAL_RESULTS_DIR (checked by `Settings` for a run)
    dataset: str | None = None  # EVAL_DATASET: a case file or folder replacing the bundled cases
    pgdata: str | None = None  # LOCALNEON_PGDATA as set (None: the local server's default)
    database_url: str | None = None  # DATABASE_URL as set (None: unset), instead of the embedded cluster
    keep_cluster: bool = False  # LOCALNEON_KEEP=1: leave the embedded PostgreSQL running
    npm_cache: Path = DEFAULT_NPM_CACHE  # EVAL_NPM_CACHE: where npm servers are installed
    server: str | None = None  # EVAL_SERVER as set (for tools that choose before `Settings` is read)

    @property
    def dataset_path(self) -> Path:
        """The case file or folder of this run: EVAL_DATASET, else the bundled cases."""
        return Path(self.dataset) if self.dataset else DEFAULT_DATASET

    @property
    def pgdata_dir(self) -> Path:
        """The local server's data directory, resolved (`LOCALNEON_PGDATA` or its default)."""
        return Path(self.pgdata or DEFAULT_PGDATA).expanduser().resolve()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HostSettings:
        source = process_env() if env is None else env
        return cls(
            results_dir=Path(source.get("EVAL_RESULTS_DIR", "").strip() or DEFAULT_RESULTS_DIR),
            dataset=_text(source, "EVAL_DATASET"),
            pgdata=_text(source, "LOCALNEON_PGDATA"),
            database_url=source.get("DATABASE_URL"),
            keep_cluster=source.get("LOCALNEON_KEEP") == "1",
            npm_cache=Path(_text(source, "EVAL_NPM_CACHE") or DEFAULT_NPM_CACHE),
            server=_text(source, "EVAL_SERVER"),
        )


class read_once(Generic[T]):  # lower case: used as a decorator, like functools.cache
    """A settings object built from `process_env()` once, and again only for a new snapshot: the
    cached accessor for code a library calls without a way to pass the settings down (Braintrust's
    task, scorer and reporter callbacks)."""

    def __init__(self, build: Callable[[Mapping[str, str]], T]) -> None:
        self._build = build
        self._made: tuple[Mapping[str, str], T] | None = None
        self.__doc__ = build.__doc__

    def __call__(self) -> T:
        snapshot = process_env()
        if self._made is None or self._made[0] is not snapshot:
            self._made = (snapshot, self._build(snapshot))
        return self._made[1]


@read_once
def host(env: Mapping[str, str]) -> HostSettings:
    """This process's `HostSettings`, read once from `process_env()`."""
    return HostSettings.from_env(env)
