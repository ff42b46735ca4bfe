"""Ctrl-C while the first `make` makes `.venv` leaves a python without pip; the next `make` must
notice and make the venv again rather than fail with "No module named pip" for ever. Neither leaves
the folder `python -m venv` unpacks pip's wheels into (it was left in /tmp after some interrupts).

The interrupt is real (SIGINT to make's process group while `python -m venv` installs pip). The
second `make` installs only pip itself (`PIP_INSTALL_ARGS=pip`, from no index) so that the test
needs no network and no minutes: the venv step and the recipe around it are the real ones.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.evals.cli import REPO_ROOT


@pytest.mark.long  # makes a venv from scratch: minutes of pip
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_a_venv_cut_short_by_ctrl_c_is_made_again_by_the_next_make(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    make = ["make", "-s", f"VENV={venv}", "PIP_INSTALL_ARGS=pip", f"{venv}/.installed-stamp"]
    temp_before = set(Path(tempfile.gettempdir()).iterdir())
    first = subprocess.Popen(
        make, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not python.exists():
        assert first.poll() is None and time.monotonic() < deadline, "make never began the venv"
        time.sleep(0.01)
    time.sleep(0.2)  # `python -m venv` is now installing pip
    os.killpg(first.pid, signal.SIGINT)
    first.communicate(timeout=60)
    assert first.returncode != 0
    pip = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True)
    assert pip.returncode != 0 and "No module named pip" in pip.stderr, "the interrupt came too late to test"

    second = subprocess.run(make, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)

    assert second.returncode == 0, second.stderr[-3000:]
    assert subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0
    assert (venv / ".installed-stamp").exists()
    assert not Path(f"{venv}.tmp").exists(), "the venv step's own temp folder outlived it"
    new = set(Path(tempfile.gettempdir()).iterdir()) - temp_before  # other processes' folders may appear too
    assert [path for path in new if path.is_dir() and any(path.glob("pip-*.whl"))] == []
