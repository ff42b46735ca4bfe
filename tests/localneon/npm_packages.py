"""Neon's client libraries from npm, installed once from the committed lock file.

`tests/localneon/npm/` holds a package.json and package-lock.json pinning `@neondatabase/api-client`
(the published server 0.6.5's REST client), `@neon/sdk` (the hosted server's, at its repository's
HEAD) and `@neondatabase/serverless`. The first use runs `npm ci` there (node_modules is gitignored,
about 13 MB, ~5 s); later uses find a stamp holding the lock file's hash and install nothing, until
the lock file changes. A file lock keeps two test processes from installing at once.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from filelock import FileLock

NPM_DIR = Path(__file__).resolve().parent / "npm"
STAMP = NPM_DIR / "node_modules" / ".localneon-installed"
INSTALL_TIMEOUT_S = 600


class NpmMissing(RuntimeError):
    """node or npm is not on PATH."""


def _lock_hash() -> str:
    return hashlib.sha256((NPM_DIR / "package-lock.json").read_bytes()).hexdigest()


def ensure_installed() -> bool:
    """Install the pinned packages unless the stamp says this lock file is installed; True if it ran npm."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise NpmMissing("node and npm must be on PATH to install Neon's client libraries from npm")
    with FileLock(str(NPM_DIR / ".install.lock"), timeout=INSTALL_TIMEOUT_S):
        wanted = _lock_hash()
        if STAMP.is_file() and STAMP.read_text().strip() == wanted:
            return False
        proc = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=NPM_DIR,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"npm ci in {NPM_DIR} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        STAMP.write_text(wanted + "\n")
        return True


if __name__ == "__main__":  # `python -m tests.localneon.npm_packages` (`make npm`; CI runs it before `make test`)
    print("installed Neon's client libraries" if ensure_installed() else "Neon's client libraries already installed")
