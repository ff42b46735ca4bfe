"""A disk that fills up mid-write leaves the run readable: the refused record is undone, not half-written.

The fault is real: a child process writes through the store under a file size limit (RLIMIT_FSIZE,
with SIGXFSZ ignored, so the kernel lets part of the write through and then refuses the rest with
EFBIG, as a full disk does with ENOSPC). No write function is patched.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.recording.store import TRIALS_FILE, ResultsStore, load_run
from tests.evals.cli import python_module, run_in_repo
from tests.scorers.conftest import record

CHILD = """
import resource, signal, sys
from pathlib import Path
from harness.recording.store import ResultsStore, StoreWriteError
from tests.scorers.conftest import record

run_dir, limit = Path(sys.argv[1]), int(sys.argv[2])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a killed process, as ENOSPC would be
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
store = ResultsStore(run_dir.parent, run_dir.name)
big = record("add-column-description", trial_index=2, final_answer="x" * 20000)
try:
    store.append(big)
except StoreWriteError as error:
    print("refused:", error)
    sys.exit(0)
sys.exit("the write went through")
"""


def test_a_write_the_disk_refuses_leaves_the_file_as_it_was_and_the_run_readable(tmp_path: Path) -> None:
    run_dir = tmp_path / "results" / "full-disk-run"
    store = ResultsStore(run_dir.parent, run_dir.name)
    for index in range(2):
        store.append(record("add-column-description", trial_index=index))
    trials = run_dir / TRIALS_FILE
    before = trials.read_bytes()
    limit = len(before) + 1000  # room for part of the next record, not all of it
    child = run_in_repo([sys.executable, "-c", CHILD, str(run_dir), str(limit)], timeout=120)
    assert child.returncode == 0, child.stdout + child.stderr
    assert "refused:" in child.stdout and "File too large" in child.stdout, child.stdout
    assert trials.read_bytes() == before, "the refused record left part of itself behind"
    _, records = load_run(run_dir)
    assert [item.trial_index for item in records] == [0, 1]
    report = run_in_repo(python_module("analysis.report", str(run_dir)), timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (run_dir / "report.html").is_file()


def test_a_torn_last_line_from_a_killed_writer_is_skipped_not_fatal(tmp_path: Path) -> None:
    run_dir = tmp_path / "results" / "torn-run"
    store = ResultsStore(run_dir.parent, run_dir.name)
    store.append(record("add-column-description", trial_index=0))
    trials = run_dir / TRIALS_FILE
    with trials.open("ab") as handle:  # what a process killed inside its write leaves
        handle.write(record("add-column-description", trial_index=1).model_dump_json().encode()[:200])
    _, records = load_run(run_dir)
    assert [item.trial_index for item in records] == [0]
