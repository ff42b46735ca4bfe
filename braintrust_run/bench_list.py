"""`python -m braintrust_run.bench_list`: the wall time of `braintrust eval --list evals/`, printed with its target.

Why a benchmark and not a test: a timing on a shared machine says nothing alone; the figure is
printed for a person to read (`make bench`), never asserted. `--list` imports every eval file, so
this measures what an import costs: since the run's checks moved to its start (`braintrust_run.start`) it
is the Python imports alone. Each run gets an empty `LOCALNEON_PGDATA`; the line says whether any
run created it (it must not: listing starts no PostgreSQL).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 5.0


def list_command() -> list[str]:
    """The CLI of this interpreter's environment, listing every eval without sending anything."""
    executable = shutil.which("braintrust", path=str(Path(sys.executable).parent)) or "braintrust"
    return [executable, "eval", "--list", "--no-send-logs", str(REPO_ROOT / "evals")]


def time_list(pgdata: Path) -> tuple[float, int]:
    """One `--list`: its wall time in seconds and how many evaluators it named (it must succeed)."""
    env = {**os.environ, "LOCALNEON_PGDATA": str(pgdata)}
    started = time.perf_counter()
    done = subprocess.run(list_command(), cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_list: braintrust eval --list failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, sum(1 for line in done.stdout.splitlines() if "experiment_name=" in line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3, help="how many times to list (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-list-") as folder:
        pgdata = Path(folder) / "pgdata"
        timings = [time_list(pgdata) for _ in range(max(1, args.runs))]
        started_pg = pgdata.exists() or any(Path(folder).glob(".pgdata.leases"))
    seconds = [elapsed for elapsed, _ in timings]
    median = statistics.median(seconds)
    print(
        f"braintrust eval --list evals/: {timings[-1][1]} evaluators, median {median:.2f} s "
        f"(min {min(seconds):.2f}, max {max(seconds):.2f}) over {len(seconds)} run(s); "
        f"target < {TARGET_S:.0f} s {'met' if median < TARGET_S else 'MISSED'}; "
        f"PostgreSQL started: {'YES' if started_pg else 'no'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
