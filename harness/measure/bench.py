"""`python -m harness.measure.bench`: what the harness costs beyond the database work, as three ratios.

Absolute times on a shared machine mean little, so every figure is a ratio of two measurements
taken in the same run, on the same machine and the same PostgreSQL:

- overhead ratio: the median control-agent trial over the least database work it cannot avoid
  (`python -m localneon.measure.least_work`, run as a separate process: the harness never imports the server);
- concurrency speedup: throughput at concurrency N over throughput at 1, with a control agent that
  waits `--delay` seconds per model call, as a fast model would;
- memory: the harness process's resident memory after all `--memory-trials` trials over after the
  first fifth of them (growth means something keeps every trial alive).

Numbers are printed with their targets, never asserted by tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.cases import Case, load_cases
from harness.config import Settings
from harness.environment import host
from harness.mcp.server_process import LocalServer
from harness.measure.cpu_split import CpuSplit, describe, postmaster_of
from harness.models.providers import ModelTurn, Provider, TrialContext
from harness.recording.records import TrialRecord
from harness.run import liveness
from harness.run.shared import shared_local_server
from harness.run.trial import TrialRunner

PHASES = ("sandbox_open", "capture_before", "connect", "agent", "capture_after", "expected", "sandbox_close")
TARGETS = {"overhead": 1.5, "speedup": 6.0, "memory": 1.1}


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def phase_table(records: list[TrialRecord]) -> list[str]:
    samples: dict[str, list[float]] = defaultdict(list)
    for record in records:
        for phase in (*PHASES, "total"):
            value = record.duration_s if phase == "total" else record.timings.get(phase)
            if value is not None:
                samples[phase].append(value * 1000)
    return [
        f"  {phase:<16} n={len(values):<4} median={statistics.median(values):8.1f} ms  p90={_p90(values):8.1f} ms"
        for phase, values in samples.items()
    ]


class SlowModel:
    """A provider that answers like the wrapped one after `delay` seconds (a fast model's latency)."""

    def __init__(self, inner: Provider, delay: float) -> None:
        self.inner = inner
        self.delay = delay
        self.name = inner.name

    def for_trial(self, context: TrialContext) -> Provider:
        return SlowModel(self.inner.for_trial(context), self.delay)

    async def complete(self, **request: Any) -> ModelTurn:
        await asyncio.sleep(self.delay)
        return await self.inner.complete(**request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def run_batch(runner: TrialRunner, cases: list[Case], concurrency: int) -> tuple[list[TrialRecord], float]:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, case: Case) -> TrialRecord:
        async with gate:
            return await runner.run(case, index)

    started = time.perf_counter()
    records = await asyncio.gather(*(one(index, case) for index, case in enumerate(cases)))
    return list(records), time.perf_counter() - started


async def run_and_drop(runner: TrialRunner, cases: list[Case], concurrency: int) -> list[str]:
    """Run `cases` as a run does (at most `concurrency` at once), keeping no record, only the errors of
    trials that were not ok: what the memory figure must not count is the bench holding records."""
    errors: list[str] = []
    queue = iter(enumerate(cases))

    async def worker() -> None:
        for index, case in queue:
            record = await runner.run(case, index)
            if record.outcome != "ok":
                errors.append(record.error or record.outcome)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return errors


def resident_mb() -> float:
    """This process's resident memory now (not its peak), in MB."""
    with open(f"/proc/{os.getpid()}/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def least_work_ms(case: Case, runs: int) -> float:
    """Median of the least database work `case` needs, measured by the server's package in its own process."""
    assert case.fixture_path is not None and case.reference_sql
    command = [sys.executable, "-m", "localneon.measure.least_work", "--fixture", str(case.fixture_path)]
    command += ["--migration", case.reference_sql, "--runs", str(runs)]
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(json.loads(completed.stdout.strip().splitlines()[-1])["median_ms"])


def verdict(name: str, value: float, better: str) -> str:
    target = TARGETS[name]
    met = value <= target if better == "lower" else value >= target
    sign = "<=" if better == "lower" else ">="
    return f"target {sign} {target}: {'met' if met else 'NOT MET'}"


def not_ok(records: list[TrialRecord]) -> str:
    failures = [record.error for record in records if record.outcome != "ok"]
    return f"  {len(failures)} trial(s) not ok, first: {failures[0]}" if failures else ""


async def overhead(settings: Settings, case: Case, trials: int, server: LocalServer | None) -> float:
    async with TrialRunner(settings, local_server=server, write_results=False) as runner:
        await runner.run(case, 0)  # warm-up: server start, first connections
        before = least_work_ms(case, trials)
        records, elapsed = await run_batch(runner, [case] * trials, 1)
        after = least_work_ms(case, trials)
    least = statistics.median([before, after])
    median = statistics.median(record.duration_s for record in records) * 1000
    ratio = median / least
    print(f"{case.id}: {trials} trials one at a time, {elapsed:.2f} s")
    print("\n".join(phase_table(records)))
    print(not_ok(records) or "  all ok")
    print(
        f"overhead ratio: {ratio:.2f} (trial median {median:.0f} ms / least database work {least:.0f} ms), "
        f"{verdict('overhead', ratio, 'lower')}"
    )
    return ratio


async def speedup(
    settings: Settings, cases: list[Case], concurrency: int, delay: float, server: LocalServer | None
) -> float:
    async with TrialRunner(settings, local_server=server, write_results=False) as runner:
        assert runner.provider is not None
        runner.provider = SlowModel(runner.provider, delay)
        await runner.run(cases[0], 0)
        rates: dict[int, float] = {}
        cpu_per_trial = 0.0
        server_pid = runner.server.process.pid if runner.server and runner.server.process else None
        postmaster = postmaster_of(liveness.pgdata_dir()) if server_pid else None
        for level in (1, concurrency):
            before = CpuSplit.now(server_pid, postmaster)
            records, elapsed = await run_batch(runner, cases, level)
            split = CpuSplit.now(server_pid, postmaster).since(before, len(records))
            cpu_per_trial = sum(split.values())
            rates[level] = len(records) / elapsed
            print(
                f"{len(records)} trials at concurrency {level} ({delay * 1000:.0f} ms per model call): "
                f"{rates[level]:.2f} trials/s, {cpu_per_trial:.2f} CPU-s per trial (whole machine)"
                f"\n  CPU-s per trial by process: {describe(split)}"
                + (f"\n{not_ok(records)}" if not_ok(records) else "")
            )
    ratio = rates[concurrency] / rates[1]
    cores = os.cpu_count() or 1
    ceiling = cores / cpu_per_trial / rates[1] if cpu_per_trial > 0 else float("inf")
    print(
        f"concurrency speedup: {ratio:.2f} (throughput at {concurrency} over 1), {verdict('speedup', ratio, 'higher')}"
        f"\n  ceiling on this machine: {ceiling:.2f} ({cores} cores over the CPU a trial costs, "
        "harness, server and PostgreSQL together, at the concurrency-1 throughput)"
    )
    return ratio


async def memory(
    settings: Settings, cases: list[Case], trials: int, concurrency: int, server: LocalServer | None
) -> float:
    checkpoint = max(1, trials // 5)
    async with TrialRunner(settings, local_server=server, write_results=False) as runner:
        errors = await run_and_drop(runner, [cases[i % len(cases)] for i in range(checkpoint)], concurrency)
        early = resident_mb()
        errors += await run_and_drop(runner, [cases[i % len(cases)] for i in range(trials - checkpoint)], concurrency)
        late = resident_mb()
    ratio = late / early
    failures = f"\n  {len(errors)} trial(s) not ok, first: {errors[0]}" if errors else ""
    print(f"RSS after {checkpoint} trials {early:.0f} MB, after {trials} trials {late:.0f} MB{failures}")
    print(
        f"memory: {ratio:.2f} (RSS after {trials} trials over after {checkpoint}), {verdict('memory', ratio, 'lower')}"
    )
    return ratio


def filesystem_of(path: Path) -> str:
    """The type of the filesystem holding `path` (/proc/mounts, longest mount point), or "unknown".

    Why: cloning a database creates some 300 files, and what a file creation costs depends on the
    filesystem far more than on anything the harness does; the figures are only comparable with it.
    """
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    path = path.resolve()
    best, kind = "", "unknown"
    for mount_point, fstype in mounts:
        mount_point = mount_point.replace("\\040", " ")
        if path.is_relative_to(mount_point) and len(mount_point) > len(best):
            best, kind = mount_point, fstype
    return kind


async def bench(args: argparse.Namespace) -> None:
    settings = Settings.from_env(warn=False).for_model(args.model)
    if settings.uses_local_server and not host().database_url:
        pgdata = liveness.pgdata_dir()
        print(f"PostgreSQL data directory: {pgdata} ({filesystem_of(pgdata)})")
    cases = load_cases()
    migration = next(case for case in cases if case.scenario == "prepare" and case.reference_sql)
    chosen = [cases[index % len(cases)] for index in range(args.trials)]
    server = shared_local_server(settings)  # one server for the three phases, started by the first
    try:
        if settings.uses_local_server:
            await overhead(settings, migration, args.trials, server)
        else:
            print("overhead ratio: n/a (the least work is measured on the local server's PostgreSQL)")
        await speedup(settings, chosen, args.concurrency, args.delay, server)
        await memory(settings, cases, args.memory_trials, args.concurrency, server)
    finally:
        if server is not None:
            server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.measure.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="control:oracle", choices=["control:oracle", "control:unsafe"])
    parser.add_argument("--trials", type=int, default=16, help="trials per batch (overhead, speedup)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per model call in the speedup batch")
    parser.add_argument("--memory-trials", type=int, default=500)
    args = parser.parse_args(argv)
    asyncio.run(bench(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
