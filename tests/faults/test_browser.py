"""`make test` on a machine without Chromium that it cannot install it on (not root, or no apt-get)
says so in one line naming the command, before any test runs, and stops."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.evals.cli import REPO_ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_names_the_chromium_install_before_any_test_runs(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with make and nothing else: no chromium, no apt-get
    bin_dir.mkdir()
    make = shutil.which("make")
    assert make is not None
    (bin_dir / "make").symlink_to(make)
    env = {**os.environ, "PATH": str(bin_dir), "PYTEST_ADDOPTS": "--collect-only -q"}  # never a full run here

    completed = subprocess.run(
        ["make", "-s", "test"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )

    assert completed.returncode != 0, completed.stdout[-2000:]
    # make's own "make: *** ... Error 2" (or "make[1]: ***" when make test runs this test) is not ours.
    ours = [line for line in completed.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert ours == ["make: the page tests need headless Chromium; install it with: sudo apt-get install -y chromium"]
    assert "collected" not in completed.stdout and "test" not in completed.stdout, "tests ran"
