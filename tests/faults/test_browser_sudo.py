"""`make browser` (run by `make test`) on a runner that is not root: with passwordless sudo (GitHub's
runners) it installs Chromium through `sudo -n`; when sudo would ask for a password it names the
command and exits 2; as root it needs no sudo.

`sudo` and `apt-get` are stand-ins on PATH that log how they were called (nothing is installed);
the user is dropped to `nobody` with setpriv when the tests run as root.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.evals.cli import REPO_ROOT

NOBODY = 65534
INSTALLING = "make: installing headless Chromium for the page tests (sudo apt-get install chromium)"
NAMED = "make: the page tests need headless Chromium; install it with: sudo apt-get install -y chromium"

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("bash") is None, reason="needs make")


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    """A folder `nobody` can read and write (pytest's own temp folders are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="browser-sudo-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def stand_in(folder: Path, name: str, body: str) -> None:
    script = folder / name
    script.write_text(f'#!/bin/bash\necho "{name} $*" >> {folder}/calls.log\n{body}\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def make_browser(folder: Path, *, as_root: bool = False) -> subprocess.CompletedProcess[str]:
    """`make -s browser` with the stand-ins first on PATH and no Chromium anywhere on it."""
    path = f"{folder}:/usr/bin:/bin"
    assert not any(Path(d, c).exists() for d in path.split(":") for c in ("chromium", "chromium-browser"))
    command = ["make", "-s", "browser"]
    if not as_root and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root and no setpriv to drop to another user")
        command = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    env = {"PATH": path, "HOME": str(folder), "LANG": "C"}
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_a_runner_with_passwordless_sudo_installs_chromium_through_sudo(bin_dir: Path) -> None:
    stand_in(bin_dir, "sudo", 'if [ "$1" = -n ]; then shift; fi\nexec "$@"')  # passwordless: runs the command
    stand_in(bin_dir, "apt-get", "exit 0")
    completed = make_browser(bin_dir)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.splitlines() == [INSTALLING]
    logged = calls(bin_dir)
    assert logged[0] == "sudo -n true"  # asked first, never prompting
    assert logged[1].startswith("sudo -n bash -c apt-get update")
    assert "apt-get update -qq" in logged and "apt-get install -y -qq chromium" in logged


def test_a_runner_whose_sudo_wants_a_password_is_told_the_command(bin_dir: Path) -> None:
    stand_in(bin_dir, "sudo", "echo 'sudo: a password is required' >&2\nexit 1")
    stand_in(bin_dir, "apt-get", "exit 0")
    completed = make_browser(bin_dir)
    assert completed.returncode == 2
    ours = [line for line in completed.stderr.splitlines() if not line.startswith("make: ***")]
    assert ours == [NAMED]
    assert calls(bin_dir) == ["sudo -n true"]  # nothing installed, no prompt


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_root_installs_with_apt_get_and_no_sudo(bin_dir: Path) -> None:
    stand_in(bin_dir, "sudo", "exit 1")
    stand_in(bin_dir, "apt-get", "exit 0")
    completed = make_browser(bin_dir, as_root=True)
    assert completed.returncode == 0, completed.stderr
    assert calls(bin_dir) == ["apt-get update -qq", "apt-get install -y -qq chromium"]
