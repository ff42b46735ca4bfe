"""Which tool surface the local twin wears in a run: Neon's own words by default, taken on this machine.

Why: the suite asks whether a model picks the right tool *given this server's descriptions*. The twin
words its tools in its own sentences, so a default run would measure wording nobody at Neon wrote.
Neon's text is never committed: where Node is on PATH, Neon's published server (installed from the
lock file, `make npm` or on first use) is started against the twin and its surface saved with
`python -m localneon.snapshot`, cached beside the embedded cluster; with a `NEON_API_KEY`,
`make snapshot` saves the hosted server's current surface the same way, and a run then prefers it.
Every local run wears what `choose` picks (`LOCALNEON_SURFACE` for the twin) and names it on its
first line and in its experiments' metadata. Tools the snapshot lacks keep the twin's wording and
are listed.

`EVAL_SURFACE`: `auto` (default: hosted if cached, else published if Node is here, else the twin's
own), `published`, `hosted`, `own`. `LOCALNEON_SURFACE=FILE` (a snapshot of your own) wins over all.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from harness.config import DEFAULT_NEON_MCP_URL
from harness.environment import DEFAULT_PGDATA
from harness.servers.neon.published.install import NpmInstallError, ensure_installed, lock_hash
from harness.servers.neon.published.pin import SERVER_PACKAGE, pinned_label
from harness.servers.neon.surface_label import FILE_ENV, OWN_LABEL, SurfaceChoiceError, label_of

REPO_ROOT = Path(__file__).resolve().parents[3]
SURFACE_ENV = "EVAL_SURFACE"
MODES = ("auto", "published", "hosted", "own")
HOSTED_URL_ENV = "NEON_MCP_URL"  # where `make snapshot` reads the hosted surface (the harness's own setting)
TAKE_TIMEOUT_S = 180.0
TWIN_TOKEN = "twin-surface"  # the twin started for a snapshot runs with this token; it serves nothing else


@dataclass(frozen=True)
class WornSurface:
    """What the twin wears: a label for lines and metadata, the file (None: its own), the tools it
    lacks (they keep the twin's wording), and why this one was chosen."""

    label: str
    path: Path | None
    lacks: tuple[str, ...] = ()
    why: str = ""

    def line(self) -> str:
        """The first line's words: `surface: <label> (<why>)`, then the tools that keep the twin's words."""
        text = f"surface: {self.label}" + (f" ({self.why})" if self.why else "")
        if self.lacks:
            text += f"; {len(self.lacks)} tools it lacks keep localneon's wording: {', '.join(self.lacks)}"
        return text


def cache_folder(env: Mapping[str, str] = os.environ) -> Path:
    """Beside the embedded cluster (`LOCALNEON_PGDATA`'s parent, default `.localneon/`), never committed."""
    pgdata = Path(env.get("LOCALNEON_PGDATA") or DEFAULT_PGDATA).expanduser()
    return pgdata.parent / "surfaces"


def published_file(env: Mapping[str, str] = os.environ) -> Path:
    """Keyed by the lock file: a new pin takes a new snapshot instead of wearing the old one's words."""
    return cache_folder(env) / f"mcp-server-neon-{lock_hash()}.json"


def hosted_file(env: Mapping[str, str] = os.environ) -> Path:
    return cache_folder(env) / "neon-hosted.json"


def lacks_of(path: Path) -> tuple[str, ...]:
    """The tools the snapshot lacks, as recorded beside it when it was taken (none recorded: none known)."""
    try:
        return tuple(json.loads(lacks_file(path).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return ()


def lacks_file(path: Path) -> Path:
    return path.with_name(path.stem + ".lacks.json")


def worn(path: Path, why: str) -> WornSurface:
    return WornSurface(label_of(path), path, lacks_of(path), why)


def choose(
    env: Mapping[str, str] = os.environ,
    *,
    take: Callable[[Path], None] | None = None,
    node: Callable[[], bool] = lambda: shutil.which("node") is not None,
) -> WornSurface:
    """The surface a local run wears; `take(path)` saves Neon's published one when it is not cached
    (default `take_published`). Raises SurfaceChoiceError for a mode that cannot be honoured."""
    explicit = env.get(FILE_ENV)
    if explicit:
        if not Path(explicit).is_file():
            raise SurfaceChoiceError(f"{FILE_ENV}={explicit}: no such file")
        return worn(Path(explicit), FILE_ENV)
    mode = (env.get(SURFACE_ENV) or "auto").strip().lower()
    if mode not in MODES:
        raise SurfaceChoiceError(f"{SURFACE_ENV}={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "own":
        return WornSurface(OWN_LABEL, None, (), f"{SURFACE_ENV}=own")
    hosted = hosted_file(env)
    if mode == "hosted" or (mode == "auto" and hosted.is_file()):
        if not hosted.is_file():
            raise SurfaceChoiceError(
                f"{SURFACE_ENV}=hosted: no hosted snapshot in {hosted}; take one with make snapshot"
            )
        return worn(hosted, "the hosted server's, from make snapshot")
    if not node():
        if mode == "published":
            raise SurfaceChoiceError(f"{SURFACE_ENV}=published needs node on PATH to run {SERVER_PACKAGE}")
        return WornSurface(OWN_LABEL, None, (), "no node on PATH to run Neon's published server")
    published = published_file(env)
    if not published.is_file():
        try:
            (take or take_published)(published)
        except SurfaceChoiceError as error:  # no registry, a broken install: say so, and run in the twin's words
            if mode == "published":
                raise
            return WornSurface(OWN_LABEL, None, (), f"Neon's published surface could not be taken: {error}")
    return worn(published, "taken from Neon's published server on this machine")


def take_published(path: Path, say: Callable[[str], None] | None = None) -> None:
    """Save the pinned npm server's surface, served against a twin started for it, into `path`."""
    emit = say or (lambda line: print(f"evals: {line}", file=sys.stderr, flush=True))
    # Named before npm or the twin say anything: the run's first line always says whose words it wears.
    emit(f"surface: {pinned_label()}: taking its tool surface, once, against the twin (cached in {path.parent})")
    log: list[str] = []
    try:
        folder = ensure_installed(log=log)
    except NpmInstallError as error:
        raise SurfaceChoiceError(f"{SURFACE_ENV}: {error}") from None
    for line in log:
        emit(line)
    from harness.servers.neon.stdio import KEY_PLACEHOLDER, KEY_PRELOAD, server_entry, server_environment

    entry = str(server_entry(folder))
    node = shutil.which("node") or "node"  # by its path: the snapshot's server gets no PATH of ours
    command = shlex.join([node, "--import", KEY_PRELOAD.as_uri(), entry, "start", KEY_PLACEHOLDER, "--no-analytics"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if path.is_file():  # another run took it while this one waited
            return
        with _Twin() as twin, tempfile.TemporaryDirectory(prefix="surface-", dir=path.parent) as work:
            env = server_environment(twin.api_url, TWIN_TOKEN)
            taken = Path(work) / "neon.json"
            _snapshot([command, "-o", str(taken)], env)
            _keep(taken, path, twin.tool_names(Path(work)))


def take_hosted(env: Mapping[str, str] = os.environ) -> Path:
    """`make snapshot`: the hosted server's current surface (token from NEON_API_KEY, never stored)."""
    if not env.get("NEON_API_KEY"):
        raise SurfaceChoiceError("make snapshot needs NEON_API_KEY (the hosted server's surface is per account)")
    path = hosted_file(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    url = env.get(HOSTED_URL_ENV) or DEFAULT_NEON_MCP_URL
    with FileLock(str(path) + ".lock"), tempfile.TemporaryDirectory(prefix="surface-", dir=path.parent) as work:
        taken = Path(work) / "hosted.json"
        _snapshot([url, "-o", str(taken)], {**os.environ, **env})
        with _Twin() as twin:
            _keep(taken, path, twin.tool_names(Path(work)))
    return path


def _keep(taken: Path, path: Path, twin_names: set[str]) -> None:
    """Put a finished snapshot in place, with the twin's tools it lacks beside it: whole or not at all."""
    lacks_file(path).write_text(json.dumps(sorted(twin_names - _names(taken))) + "\n", encoding="utf-8")
    os.replace(taken, path)


def _names(path: Path) -> set[str]:
    return {tool["name"] for tool in json.loads(path.read_text(encoding="utf-8"))["tools"]}


def _snapshot(args: list[str], env: Mapping[str, str]) -> None:
    taking = subprocess.run(
        [sys.executable, "-m", "localneon.snapshot", *args],
        cwd=REPO_ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=TAKE_TIMEOUT_S,
        check=False,
    )
    if taking.returncode != 0:
        said = (taking.stderr.strip() or taking.stdout.strip()).splitlines()
        raise SurfaceChoiceError(f"{SURFACE_ENV}: taking a surface failed: {said[-1] if said else taking.returncode}")


class _Twin:
    """A twin started for a snapshot and stopped after it (its cluster released as a run's is)."""

    def __enter__(self) -> _Twin:
        from harness.mcp.server_process import LocalServer

        self.server = LocalServer(token=TWIN_TOKEN)
        endpoints = self.server.start_blocking()
        self.api_url, self.mcp_url = endpoints.api_url, endpoints.mcp_url
        return self

    def tool_names(self, work: Path) -> set[str]:
        """The twin's own tools, listed over MCP as any client lists them."""
        listed = work / "twin.json"
        _snapshot(
            [self.mcp_url, "--token-env", "LOCALNEON_TOKEN", "-o", str(listed)],
            {**os.environ, "LOCALNEON_TOKEN": TWIN_TOKEN},
        )
        return _names(listed)

    def __exit__(self, *exc: Any) -> None:
        self.server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.servers.neon.worn_surface", description=__doc__)
    parser.add_argument(
        "action", choices=("show", "take", "hosted"), help="show the choice; take it; take the hosted one"
    )
    args = parser.parse_args(argv)
    try:
        if args.action == "hosted":
            print(worn(take_hosted(), "the hosted server's, from make snapshot").line())
            return 0
        if args.action == "take":
            published_file().parent.mkdir(parents=True, exist_ok=True)
            if not published_file().is_file():
                take_published(published_file())
        print(choose().line())
    except SurfaceChoiceError as error:
        print(f"surface: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
