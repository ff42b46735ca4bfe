"""`python -m validity` (`make validity`): play the behaviour library, run the baselines, write the page.

    python -m validity                       # every behaviour, on the twin and (with Node) Neon's npm server
    python -m validity --fast                # the fast slice (`fast: true`), twin only, no baselines
    python -m validity --servers local --write-page docs/validity.md

It ends with one JSON line (`{"validity": {...}}`) and exits 0 when every verdict agrees with every
label outside the listed known limits and no baseline passes a case it should not; 1 when one does
(each named on stderr), or a known limit no longer happens; 2 when a behaviour file or setting is
wrong, or the lab could not judge a behaviour (a trial missing, an infrastructure error, a script
the conversation could not play).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.cases import DatasetError, load_cases
from harness.models.control import BASELINES
from validity.baselines import baseline_results
from validity.behaviours import BUNDLED_BEHAVIOURS, REPO_ROOT, BehaviourError, load_behaviours
from validity.lab import DEFAULT_TIMEOUT, play, run_baselines
from validity.page import LabReport, render_page, summary_line

BUNDLED_CASES = REPO_ROOT / "datasets" / "cases"


def default_servers() -> list[str]:
    """The twin always; Neon's published server where Node and npm are on PATH."""
    return ["local", "neon-npm"] if shutil.which("node") and shutil.which("npm") else ["local"]


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m validity", description=__doc__.splitlines()[0])
    parser.add_argument("--behaviours", type=Path, default=BUNDLED_BEHAVIOURS, help="a behaviour file or folder")
    parser.add_argument("--cases", type=Path, default=BUNDLED_CASES, help="the cases they name")
    parser.add_argument("--servers", help="comma-separated EVAL_SERVER values (default: local, neon-npm with Node)")
    parser.add_argument("--fast", action="store_true", help="only the behaviours marked fast, on the twin")
    parser.add_argument("--only", help="comma-separated behaviour ids to play (a disagreement being fixed)")
    parser.add_argument("--no-baselines", action="store_true", help="leave the baselines out")
    parser.add_argument("--write-page", type=Path, help="write the page there (docs/validity.md)")
    parser.add_argument(
        "--workdir", type=Path, help="keep the runs' cases, records and logs there (else kept only on a disagreement)"
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds one server's run (or the baselines') may take"
    )
    return parser.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        cases = {case.id: case for case in load_cases(args.cases)}
        behaviours = load_behaviours(args.behaviours, cases)
    except (BehaviourError, DatasetError) as error:
        print(f"validity: {error}", file=sys.stderr)
        return 2
    chosen = [item for item in behaviours if item.fast] if args.fast else behaviours
    if args.only:
        wanted = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = sorted(wanted - {item.id for item in behaviours})
        if unknown:
            print(f"validity: --only names unknown behaviour(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        chosen = [item for item in chosen if item.id in wanted]
    servers = ["local"] if args.fast else (args.servers.split(",") if args.servers else default_servers())
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="validity-"))
    report = LabReport(behaviours=chosen, cases=cases, runs=[])
    with_baselines = not (args.fast or args.no_baselines or args.only)
    # Each server's run and the baselines' are separate `python -m evals` processes that wait mostly on
    # PostgreSQL and the MCP servers: run side by side, the lab takes as long as its longest run.
    with ThreadPoolExecutor(max_workers=len(servers) + 1) as pool:
        runs = []
        for server in servers:
            print(f"validity: playing {len(chosen)} behaviour(s) on EVAL_SERVER={server}", file=sys.stderr, flush=True)
            runs.append(pool.submit(play, chosen, cases, workdir / server, server=server, timeout=args.timeout))
        if with_baselines:
            print(f"validity: running the baselines over {len(cases)} case(s)", file=sys.stderr, flush=True)
            baselines = pool.submit(
                run_baselines, BASELINES, cases, args.cases, workdir / "baselines", timeout=args.timeout
            )
        report.runs.extend(run.result() for run in runs)
        if with_baselines:
            scored, problems = baselines.result()
            report.baselines = baseline_results(scored, BASELINES)
            report.baseline_problems = problems
    command = ["python -m validity", *(sys.argv[1:] if argv is None else argv)]
    if args.write_page:
        args.write_page.write_text(render_page(report, command), encoding="utf-8")
    for line in report.problems:
        print(f"validity: could not judge: {line}", file=sys.stderr)
    for kind in ("false_alarm", "miss"):
        for line in report.unexplained(kind):
            print(f"validity: {kind.replace('_', ' ')}: {line}", file=sys.stderr)
    for case_id in report.unexpected_passes:
        print(f"validity: a baseline passes {case_id}, which it should fail", file=sys.stderr)
    for line in report.stale:
        print(f"validity: stale known limit (it no longer happens): {line}", file=sys.stderr)
    code = 2 if report.problems else 1 if report.failed else 0
    if code == 0 and args.workdir is None:  # nothing to look into: the runs' folder is not kept
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"validity: runs kept in {workdir}", file=sys.stderr)
    print(summary_line(report), flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
