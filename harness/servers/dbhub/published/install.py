"""Install the pinned DBHub on first use, from the lock file, into the suite's npm cache folder.

The same way as Neon's published server (`harness.servers.neon.published.install`, whose progress
and error helpers this reuses): `npm ci` of exactly the lock file, once, into a folder named by the
lock file's hash (`.neon-npm/dbhub-<hash>`, or under `EVAL_NPM_CACHE`), a file lock against two
installs at once, a stamp written last. `--ignore-scripts`: DBHub's PostgreSQL driver (`pg`) needs
none; the optional native drivers whose scripts are skipped (oracledb, ssh2's cpu-features) are
never loaded for a `postgres://` DSN. About 137 MB, some 10 s.

DBHub 1.4.0 declares `engines: node >=22.5` (for its SQLite connector's `node:sqlite`); npm only
warns about it (EBADENGINE), and its PostgreSQL connector runs on the Node 20 this suite requires.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from harness.environment import host
from harness.servers.dbhub.published.pin import LOCK_FILE, PACKAGE_JSON, SERVER_PACKAGE
from harness.servers.neon.published.install import STAMP_NAME, NpmInstallError, NpmPin, npm_ci

__all__ = ["NpmInstallError", "ensure_installed", "install_dir", "installed", "server_entry"]


def lock_hash() -> str:
    return hashlib.sha256(LOCK_FILE.read_bytes() + PACKAGE_JSON.read_bytes()).hexdigest()[:16]


def install_dir(cache: Path | None = None) -> Path:
    root = cache or host().npm_cache  # EVAL_NPM_CACHE, as for Neon's server
    return root / f"dbhub-{lock_hash()}"


def server_entry(folder: Path) -> Path:
    """DBHub's entry point (`bin.dbhub` of its package.json) inside an install."""
    return folder / "node_modules" / SERVER_PACKAGE / "dist" / "index.js"


def installed(folder: Path) -> bool:
    stamp = folder / STAMP_NAME
    return stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == lock_hash()


def ensure_installed(cache: Path | None = None, log: list[str] | None = None) -> Path:
    """The install folder, after `npm ci` there unless a complete install of this lock file exists;
    `log` (when given) gets one line saying that npm ran and how long it took."""
    folder = install_dir(cache)
    if installed(folder):
        return folder
    pin = NpmPin(SERVER_PACKAGE, PACKAGE_JSON, LOCK_FILE, lock_hash(), "dbhub", "about 137 MB, some 10 s")
    return npm_ci(folder, pin, server_entry(folder), log)


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.servers.dbhub.published.install [--entry]`: install now (`make npm`, CI before
    `make test`); `--entry` prints only DBHub's entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m harness.servers.dbhub.published.install", description=f"Install {SERVER_PACKAGE} (pinned)."
    )
    parser.add_argument("--entry", action="store_true", help="print only the path of DBHub's dist/index.js")
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
