"""A first use of Neon's npm server is minutes of `npm ci`: the wait says how far it got.

The process watched is real (a Python child writing files over time, as npm fills node_modules);
the clock is injected, so the lines do not depend on how fast this machine is.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.servers.neon.published.install import folder_megabytes, watch_progress

WRITER = """
import sys, time
from pathlib import Path
folder = Path(sys.argv[1])
for index in range(4):
    (folder / f"part-{index}").write_bytes(b"x" * 1_000_000)
    time.sleep(0.3)
"""


def test_a_long_install_prints_progress_with_what_it_wrote_and_returns_its_exit_code(tmp_path: Path) -> None:
    folder = tmp_path / "node modules with spaces"
    folder.mkdir()
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], text=True)
    ticks = iter(range(0, 10_000, 15))
    lines: list[str] = []
    code = watch_progress(child, folder, lines.append, timeout=600, every=0.25, clock=lambda: float(next(ticks)))
    assert code == 0
    assert lines and all(line.startswith("still installing: ") and "MB so far" in line for line in lines)
    assert lines[0].startswith("still installing: 15s")  # the injected clock, not the wall's
    assert folder_megabytes(folder) == pytest.approx(4.0)


def test_an_install_past_its_timeout_raises(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], text=True)
    ticks = iter(range(0, 10_000, 100))
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            watch_progress(child, tmp_path, lambda _: None, timeout=250, every=0.05, clock=lambda: float(next(ticks)))
    finally:
        child.kill()
        child.wait()
