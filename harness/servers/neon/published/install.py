"""Install the pinned server on first use, from the lock file, into a gitignored cache folder.

Why `npm ci` and not `npx`: npx resolves at run time (a registry lookup every start, whatever
version is newest), while `npm ci` installs exactly the lock file, once. The folder is named by the
lock file's hash, so a changed lock installs beside the old one and a finished install is never
repeated; a file lock keeps two processes (test workers, eval runs) from installing at once, and a
stamp written last marks an install as complete. `--ignore-scripts`: the server needs no install
scripts, and none should run.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

from harness.environment import DEFAULT_NPM_CACHE, host
from harness.servers.neon.published.pin import LOCK_FILE, PACKAGE_JSON, SERVER_PACKAGE

REPO_ROOT = Path(__file__).resolve().parents[4]
DEFAULT_CACHE = DEFAULT_NPM_CACHE  # gitignored, like .venv
CACHE_ENV = "EVAL_NPM_CACHE"  # where installs go instead (e.g. a CI cache folder)
INSTALL_TIMEOUT_S = 900.0
STAMP_NAME = ".eval-installed"
PROGRESS_EVERY_S = 15.0  # a progress line this often while npm installs


class NpmInstallError(RuntimeError):
    """node/npm missing or `npm ci` failed; the message says which and shows npm's own words."""


def lock_hash() -> str:
    return hashlib.sha256(LOCK_FILE.read_bytes() + PACKAGE_JSON.read_bytes()).hexdigest()[:16]


def install_dir(cache: Path | None = None) -> Path:
    root = cache or host().npm_cache
    return root / f"mcp-server-neon-{lock_hash()}"


def server_entry(folder: Path) -> Path:
    """The server's own entry point (`bin` of its package.json) inside an install."""
    return folder / "node_modules" / SERVER_PACKAGE / "dist" / "index.js"


def installed(folder: Path) -> bool:
    stamp = folder / STAMP_NAME
    return stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == lock_hash()


def say(line: str) -> None:
    print(f"harness: {line}", file=sys.stderr, flush=True)


def folder_megabytes(folder: Path) -> float:
    """What an install has written so far (its files' sizes), in MB."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total / 1e6


def watch_progress(
    process: subprocess.Popen[str],
    folder: Path,
    emit: Callable[[str], None],
    *,
    timeout: float,
    every: float = PROGRESS_EVERY_S,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Wait for the install, saying every `every` seconds how far it got: a first use is otherwise
    minutes of silence. Its exit code; `subprocess.TimeoutExpired` past `timeout`."""
    started = clock()
    while True:
        try:
            return process.wait(timeout=every)
        except subprocess.TimeoutExpired:
            waited = clock() - started
            if waited >= timeout:
                raise
            emit(f"still installing: {waited:.0f}s, {folder_megabytes(folder):.0f} MB so far")


def ensure_installed(cache: Path | None = None, log: list[str] | None = None) -> Path:
    """The install folder, after `npm ci` there unless a complete install of this lock file exists.

    `log` (when given) gets one line saying whether npm ran and how long it took.
    """
    folder = install_dir(cache)
    if installed(folder):
        return folder
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise NpmInstallError(
            f"EVAL_SERVER=neon-npm needs node and npm on PATH to install {SERVER_PACKAGE} (not found)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder.with_name(folder.name + ".lock")), timeout=INSTALL_TIMEOUT_S):
        if installed(folder):  # another process finished it while this one waited
            return folder
        shutil.copyfile(PACKAGE_JSON, folder / "package.json")
        shutil.copyfile(LOCK_FILE, folder / "package-lock.json")
        started = time.monotonic()
        say(f"installing {SERVER_PACKAGE} with npm ci into {folder} (first use: about 525 MB, a minute or two)")
        with tempfile.TemporaryFile("w+") as output:
            proc = subprocess.Popen(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
            )
            try:
                returncode = watch_progress(proc, folder, say, timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired as error:
                proc.kill()
                proc.wait()
                raise NpmInstallError(f"npm ci in {folder} did not finish in {INSTALL_TIMEOUT_S:.0f}s") from error
            output.seek(0)
            text = output.read()
        if returncode != 0 or not server_entry(folder).is_file():
            raise NpmInstallError(
                f"npm ci in {folder} failed (exit {returncode}); installing {SERVER_PACKAGE} from "
                f"{LOCK_FILE}:\n{text[-3000:]}"
            )
        (folder / STAMP_NAME).write_text(lock_hash() + "\n", encoding="utf-8")
        if log is not None:
            log.append(f"installed {SERVER_PACKAGE} with npm ci in {time.monotonic() - started:.0f}s into {folder}")
    return folder


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.servers.neon.published.install [--entry]`: install now (CI does, before
    `make test`); `--entry` prints only the server's entry point, for a command line (docs/local-twin.md
    snapshots the server with it)."""
    parser = argparse.ArgumentParser(
        prog="python -m harness.servers.neon.published.install", description=f"Install {SERVER_PACKAGE} (pinned)."
    )
    parser.add_argument(
        "--entry", action="store_true", help="print only the path of the server's dist/index.js (installing first)"
    )
    args = parser.parse_args(argv)
    log: list[str] = []
    try:
        folder = ensure_installed(log=log)
    except NpmInstallError as error:
        print(f"install: {error}", file=sys.stderr)
        return 1
    if args.entry:
        for line in log:
            print(f"install: {line}", file=sys.stderr)
        print(server_entry(folder))
        return 0
    print(log[0] if log else f"{SERVER_PACKAGE} already installed in {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
