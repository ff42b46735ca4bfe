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
from dataclasses import dataclass
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
    return npm_ci(
        folder,
        NpmPin(SERVER_PACKAGE, PACKAGE_JSON, LOCK_FILE, lock_hash(), "neon-npm", "about 525 MB, a minute or two"),
        server_entry(folder),
        log,
    )


@dataclass(frozen=True)
class NpmPin:
    """What `npm_ci` installs: a package from its committed package.json and lock file."""

    package: str
    package_json: Path
    lock_file: Path
    lock_hash: str  # written last into the stamp: an install is complete only then
    server: str  # the EVAL_SERVER value that needs it, for the error without node
    first_use: str  # what the first install costs, said as it starts


def npm_ci(folder: Path, pin: NpmPin, entry: Path, log: list[str] | None = None) -> Path:
    """`npm ci` of exactly the pin's lock file into `folder`, once: a file lock against two installs
    at once, progress lines while it runs, npm's own words when it fails, the stamp written last."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise NpmInstallError(
            f"EVAL_SERVER={pin.server} needs node and npm on PATH to install {pin.package} (not found)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    stamp = folder / STAMP_NAME
    with FileLock(str(folder.with_name(folder.name + ".lock")), timeout=INSTALL_TIMEOUT_S):
        if stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == pin.lock_hash:
            return folder  # another process finished it while this one waited
        shutil.copyfile(pin.package_json, folder / "package.json")
        shutil.copyfile(pin.lock_file, folder / "package-lock.json")
        started = time.monotonic()
        say(f"installing {pin.package} with npm ci into {folder} (first use: {pin.first_use})")
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
        if returncode != 0 or not entry.is_file():
            raise NpmInstallError(
                f"npm ci in {folder} failed (exit {returncode}); installing {pin.package} from "
                f"{pin.lock_file}:\n{text[-3000:]}"
            )
        stamp.write_text(pin.lock_hash + "\n", encoding="utf-8")
        if log is not None:
            log.append(f"installed {pin.package} with npm ci in {time.monotonic() - started:.0f}s into {folder}")
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
