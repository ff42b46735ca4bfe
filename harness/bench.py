"""`python -m harness.bench`: what the harness itself costs per trial, with no model in the loop.

Runs the control agents (no API calls, no tokens) over bundled cases against the local server,
first one trial at a time, then at a given concurrency, and prints per-phase medians and p90s and
the throughput ratio. Numbers from one run are comparable with each other (same machine, same
moment); absolute figures vary with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import defaultdict

from harness.cases import Case, load_cases
from harness.config import Settings
from harness.records import TrialRecord
from harness.trial import TrialRunner

PHASES = ("sandbox_open", "capture_before", "connect", "agent", "capture_after", "expected", "sandbox_close")


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


async def run_batch(runner: TrialRunner, cases: list[Case], concurrency: int) -> tuple[list[TrialRecord], float]:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, case: Case) -> TrialRecord:
        async with gate:
            return await runner.run(case, index)

    started = time.perf_counter()
    records = await asyncio.gather(*(one(index, case) for index, case in enumerate(cases)))
    return list(records), time.perf_counter() - started


async def bench(model: str, trials: int, concurrency: int) -> None:
    settings = Settings.from_env(warn=False).for_model(model)
    cases = load_cases()
    chosen = [cases[index % len(cases)] for index in range(trials)]
    async with TrialRunner(settings, write_results=False) as runner:
        await runner.run(chosen[0], 0)  # warm-up: server start, first connections
        for label, level in (("sequential", 1), (f"concurrency {concurrency}", concurrency)):
            records, elapsed = await run_batch(runner, chosen, level)
            failures = [record.error for record in records if record.outcome != "ok"]
            print(f"{model}, {len(records)} trials, {label}: {elapsed:.2f} s, {len(records) / elapsed:.2f} trials/s")
            print("\n".join(phase_table(records)))
            if failures:
                print(f"  {len(failures)} trial(s) not ok, first: {failures[0]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="control:oracle", choices=["control:oracle", "control:unsafe"])
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    asyncio.run(bench(args.model, args.trials, args.concurrency))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
