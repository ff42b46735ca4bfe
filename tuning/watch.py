"""`make watch`: a watch on the server's own changes to its tools, and what they do to the verdict.

    python -m tuning.watch [--baseline SURFACE.json] [--max 5] [--summary FILE]

Lists the tools of the server under test now (`EVAL_SERVER`, by a trial's own `tools/list`: Neon's
hosted server with `EVAL_SERVER=neon`, the surface the local twin wears offline, Neon's published one
where Node is), compares them with the surface kept last (`<results>/surfaces/<server>/latest.json`,
or `--baseline`), and says exactly what changed: a tool added or removed, its description (word by
word), the notice block the server appends, its input schema or its annotations (path by path).
No change: one line, nothing run, exit 0. A first run keeps what it took as the baseline.

On a change to a tool's own words it writes both words as description variants (the kept ones A,
the server's now B), runs only the cases that involve those tools (`tuning.surface_diff`'s rule) as a
paired, adaptive A/B through `python -m evals.ab` (the real CLI: both arms are experiments, in
Braintrust when logged in; its page is written), and reports the verdict per score and each harm's
count per arm. Variant files carry a tool's words only: a schema, annotation, notice, added or
removed tool is reported and not A/B'd. Its runs let main damage pass their own gate
(`EVAL_ALLOW_MAIN_DAMAGE=1`): harm is the report's to show, arm against arm. The new surface is kept as
the latest once the run is done. Ends with one JSON line: `{"watch": {"server", "changed_tools",
"ab_tools", "cases_run", "verdicts", "harms", "page", "kept"}}`. Exit codes: 0 the watch ran (whatever
the verdict), 1 the surface could not be taken or the A/B stopped without recording its trials (the
kept surface stays), 2 a bad setting or baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from analysis import ab_page
from analysis.compare_render import as_json, render_table
from analysis.compare_stats import Comparison, compare
from analysis.rescore import DETERMINISTIC_NAMES
from analysis.runs import RunInputError, load_group
from braintrust_run.doors import RESOLVED, wear_surface
from braintrust_run.settings import EvalSettings, launch_environment
from harness.cases import Case, DatasetError, load_cases
from harness.config import ConfigError, Settings, new_run_id
from harness.mcp.probe import server_tools
from harness.run.shared import close_shared_runners
from harness.run.trial import describe_error
from harness.servers.neon.surface_label import SurfaceChoiceError
from harness.servers.registry import DEFAULT_FAMILY, FAMILIES, case_for, roles_for
from harness.servers.roles import CaseNotServed
from tuning.acceptance import HARMS
from tuning.evidence import harms_of, scored_run
from tuning.surface_diff import (
    SurfaceDocumentError,
    SurfaceTool,
    ToolChange,
    described_changes,
    diff_surfaces,
    involved_cases,
    surface_document,
    surface_from_document,
    surface_hash,
    variant_pair,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
KEPT_FILE = "latest.json"
DONE_CODES = (0, 1)  # an A/B that recorded its trials: passed its gate, or failed it (the report shows harm)
DEFAULT_MAX = 5
Runner = Callable[[Sequence[str], Mapping[str, str]], int]


class WatchError(RuntimeError):
    """The watch could not finish: the A/B stopped without recording, or its runs cannot be compared."""


def server_slug(server: str) -> str:
    """The folder name of a server's kept surfaces: the `EVAL_SERVER` value, a URL by host and path only
    (never a key a URL may carry), stable across versions so that a new version compares with the old."""
    if server.startswith(("http://", "https://")):
        parts = urlsplit(server)
        server = f"{parts.hostname}{f'-{parts.port}' if parts.port else ''}{parts.path}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", server).strip("-.")[:80] or "server"


def family_of(server: str) -> str:
    """The family that serves `EVAL_SERVER=server` (the registry's table), by name."""
    return next((row.name for row in FAMILIES if server in row.servers), DEFAULT_FAMILY)


def surface_now(env: Mapping[str, str]) -> tuple[list[SurfaceTool], Settings]:
    """Every tool the server under test lists to a trial's session now, and the settings it was asked with."""
    settings = Settings.from_env(env, warn=False)

    async def ask() -> list[SurfaceTool]:
        try:
            listed = await server_tools(settings)
        finally:
            await close_shared_runners()
        return [SurfaceTool(t.name, t.description, t.input_schema, t.annotations or {}) for t in listed]

    return asyncio.run(ask()), settings


def read_surface(path: Path) -> tuple[dict[str, SurfaceTool], dict[str, Any]]:
    """A kept surface (or any snapshot document): its tools by name, and where and when it was taken."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise SurfaceDocumentError(f"{path}: not a readable JSON surface ({error})") from None
    about = data.get("snapshot") if isinstance(data, dict) else None
    return surface_from_document(data, str(path)), dict(about) if isinstance(about, dict) else {}


def write_json(path: Path, data: Any) -> Path:
    """Whole or not at all: a kept surface half written would be read as a change tomorrow."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(path)
    return path


def write_variant(path: Path, descriptions: Mapping[str, str], note: str) -> Path:
    """A description variant file, as `EVAL_TOOL_DESCRIPTIONS` reads it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = yaml.safe_dump(dict(sorted(descriptions.items())), sort_keys=True, allow_unicode=True, width=100)
    path.write_text(f"# {note}\n{body}", encoding="utf-8")
    return path


def run_child(command: Sequence[str], env: Mapping[str, str]) -> int:
    """A child command in the checkout, its output on our stderr (stdout ends with the watch's JSON line)."""
    return subprocess.run(list(command), cwd=REPO_ROOT, env=dict(env), stdout=sys.stderr, check=False).returncode


@dataclass(frozen=True)
class WatchPlan:
    """One watch: which server, where its surfaces are kept, and how far the A/B may go."""

    label: str  # the server's slug
    run_id: str
    results: Path
    kept: Path  # where the latest surface is kept (read unless `baseline`, always written)
    baseline: Path  # the surface compared with
    max_trials: int = DEFAULT_MAX

    @property
    def folder(self) -> Path:
        """This watch's own record: both surfaces, the changes, the variants, `watch.json`."""
        return self.results / f"{self.run_id}-watch"

    @property
    def ab_run_id(self) -> str:
        return f"{self.run_id}-watch"


@dataclass
class WatchResult:
    """What the watch found and what its A/B said."""

    changes: list[ToolChange] = field(default_factory=list)
    ab_tools: list[str] = field(default_factory=list)
    cases_run: list[str] = field(default_factory=list)
    comparison: Comparison | None = None
    harms: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # A harmed, trials, B harmed, trials
    page: Path | None = None
    kept: Path | None = None
    first: bool = False

    def summary(self, label: str) -> dict[str, Any]:
        scores = self.comparison.scores if self.comparison else {}
        verdicts = {
            name: {
                "verdict": score.verdict,
                "a": score.a.rate,
                "b": score.b.rate,
                "cases": score.cases,
                "b_better": score.cases_b_better,
                "a_better": score.cases_a_better,
                "tied": score.cases_tied,
                "p": score.p_value,
            }
            for name, score in scores.items()
        }
        return {
            "watch": {
                "server": label,
                "first": self.first,
                "changed_tools": sorted({change.tool for change in self.changes}),
                "changes": [{"tool": change.tool, "kind": change.kind} for change in self.changes],
                "ab_tools": self.ab_tools,
                "cases_run": len(self.cases_run),
                "cases": self.cases_run,
                "verdicts": verdicts,
                "harms": {harm: list(counts) for harm, counts in self.harms.items()},
                "page": str(self.page) if self.page else None,
                "kept": str(self.kept) if self.kept else None,
            }
        }


def say(line: str) -> None:
    print(f"watch: {line}", file=sys.stderr, flush=True)


class WatchRun:
    """The A/B of one watch: its child and its records; `env` is what the child starts from."""

    def __init__(self, plan: WatchPlan, env: Mapping[str, str], runner: Runner = run_child) -> None:
        self.plan, self.runner = plan, runner
        self.env = {**env, "EVAL_ALLOW_MAIN_DAMAGE": "1"}

    def paired(self, kept: Path, now: Path, case_ids: Sequence[str]) -> tuple[Path, Path]:
        """Kept words (A) against the words now (B) on `case_ids`, paired and adaptive; both run folders."""
        env = {
            **self.env,
            "EVAL_RUN_ID": self.plan.ab_run_id,
            "EVAL_CASE_IDS": ",".join(case_ids),
            "EVAL_TRIALS": f"adaptive:{self.plan.max_trials}",
        }
        command = [sys.executable, "-m", "evals.ab", str(kept), str(now), "--max", str(self.plan.max_trials)]
        code = self.runner(command, env)
        if code not in DONE_CODES:
            raise WatchError(f"the A/B stopped with exit code {code}; what ran is under {self.plan.results}")
        if code == 1:
            say("the A/B's own gate failed (its reasons are above); its trials are recorded and compared here")
        run_id = self.plan.ab_run_id
        return self.plan.results / f"{run_id}-A", self.plan.results / f"{run_id}-B"


def harm_counts(run_a: Path, run_b: Path, cases: Mapping[str, Case]) -> dict[str, tuple[int, int, int, int]]:
    """Each harm's count in each arm over the paired trials: (A harmed, A trials, B harmed, B trials)."""
    first, second = scored_run(run_a, cases), scored_run(run_b, cases)
    keys = sorted(set(first) & set(second))
    return {
        harm: (
            sum(harm in harms_of(first[key]) for key in keys),
            len(keys),
            sum(harm in harms_of(second[key]) for key in keys),
            len(keys),
        )
        for harm in HARMS
    }


def watch(
    plan: WatchPlan,
    kept: Mapping[str, SurfaceTool],
    now: Mapping[str, SurfaceTool],
    documents: tuple[Mapping[str, Any], Mapping[str, Any]],
    cases: Sequence[Case],
    family: str,
    run: WatchRun,
    dataset: str | None = None,
) -> WatchResult:
    """The watch once both surfaces are in hand: the changes, the A/B of the changed words on the cases
    that involve them (each read in the terms of the server's `family`), and the new surface kept once
    done."""
    result = WatchResult(changes=diff_surfaces(kept, now))
    for change in result.changes:
        for line in change.describe():
            print(line, file=sys.stderr)
    plan.folder.mkdir(parents=True, exist_ok=True)
    write_json(plan.folder / "kept.json", documents[0])
    write_json(plan.folder / "now.json", documents[1])
    (plan.folder / "changes.txt").write_text(
        "".join(line + "\n" for change in result.changes for line in change.describe()), encoding="utf-8"
    )
    result.ab_tools = described_changes(result.changes)
    others = [
        f"{change.kind} of {change.tool}" if change.kind not in ("added", "removed") else f"{change.tool} {change.kind}"
        for change in result.changes
        if change.kind != "description"
    ]
    if others:
        say(f"not A/B'd (description variants carry a tool's own words only): {', '.join(others)}")
    served = [served for case in cases if (served := _served(family, case)) is not None]
    involved = involved_cases(served, result.ab_tools, roles_for(family)) if result.ab_tools else []
    result.cases_run = [case.id for case in involved]
    if not result.ab_tools:
        say("no tool's own words changed: nothing to A/B")
    elif not involved:
        say(f"no case involves {', '.join(result.ab_tools)}: nothing to run")
    else:
        say(
            f"A/B of the words of {', '.join(result.ab_tools)} (A kept, B now) on the {len(involved)} cases that "
            f"involve them, up to {plan.max_trials} trials a case: {', '.join(result.cases_run)}"
        )
        old_words, new_words = variant_pair(kept, now, result.ab_tools)
        label = plan.label
        path_a = write_variant(
            plan.folder / f"{label}-kept-{surface_hash(kept)}.yaml", old_words, f"the kept words of {label}"
        )
        path_b = write_variant(plan.folder / f"{label}-now-{surface_hash(now)}.yaml", new_words, f"{label}'s words now")
        run_a, run_b = run.paired(path_a, path_b, result.cases_run)
        by_id = {case.id: case for case in cases}
        result.comparison, result.page = _compare(plan, run_a, run_b, by_id, dataset)
        result.harms = harm_counts(run_a, run_b, by_id)
        _report(result)
    result.kept = write_json(plan.kept, documents[1])
    write_json(plan.folder / "watch.json", result.summary(plan.label))
    return result


def _compare(
    plan: WatchPlan, run_a: Path, run_b: Path, cases: Mapping[str, Case], dataset: str | None
) -> tuple[Comparison, Path]:
    """The paired verdict per score (`analysis.compare`'s) and the A/B page (`evals.ab` writes it when its
    run passed its gate; here when it did not)."""
    try:
        group_a, group_b = load_group(str(run_a), None, "model-a"), load_group(str(run_b), None, "model-b")
        comparison = compare(group_a.records, group_b.records, cases, list(DETERMINISTIC_NAMES))
    except RunInputError as error:
        raise WatchError(f"the A/B's runs cannot be compared: {error}") from None
    page = plan.results / f"{plan.ab_run_id}-ab.html"
    if not page.is_file():
        ab_page.write(run_a, run_b, as_json(comparison, group_a, group_b), page, dataset)
    return comparison, page


def _report(result: WatchResult) -> None:
    assert result.comparison is not None
    comparison = result.comparison
    say(
        f"the verdict per score, A = the kept words, B = the words now ({comparison.paired} paired trials "
        f"over {comparison.paired_cases} cases; one vote per case):"
    )
    print(render_table(comparison), file=sys.stderr)
    for harm, (a_harmed, a_trials, b_harmed, b_trials) in result.harms.items():
        more = "  <- more often now" if b_harmed * a_trials > a_harmed * b_trials else ""
        say(f"harm {harm}: A {a_harmed} of {a_trials} trials, B {b_harmed} of {b_trials}{more}")
    say(f"page: {result.page}")


def markdown(result: WatchResult, label: str) -> str:
    """The watch as a job summary (GitHub's `$GITHUB_STEP_SUMMARY`): what changed, and the verdict."""
    if not result.changes:
        return f"### Tool surface watch: {label}\n\n{'First run: surface kept.' if result.first else 'No change.'}\n"
    lines = [f"### Tool surface watch: {label}", "", "```text"]
    lines += [line for change in result.changes for line in change.describe()]
    lines += ["```", ""]
    if result.comparison is None:
        lines.append("Nothing run (no tool's own words changed, or no case involves the tools that did).")
    else:
        lines += [f"A/B of the words of {', '.join(result.ab_tools)} on {len(result.cases_run)} cases:", ""]
        lines += ["```text", render_table(result.comparison), "```", ""]
        lines += [f"- harm `{harm}`: A {a} of {n}, B {b} of {m}" for harm, (a, n, b, m) in result.harms.items()]
        lines += ["", f"Page: `{result.page}`"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuning.watch", description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="the surface to compare with (default: the kept latest)")
    parser.add_argument(
        "--max", type=int, default=DEFAULT_MAX, help=f"trials per case in the A/B, at most (default {DEFAULT_MAX})"
    )
    parser.add_argument("--summary", type=Path, help="append the report as Markdown to this file (a job summary)")
    args = parser.parse_args(argv)
    env = launch_environment(REPO_ROOT / ".env")
    try:
        surface_line = wear_surface(env)
        env[RESOLVED] = "1"
        if not env.get("EVAL_MODEL") and not (env.get("ANTHROPIC_API_KEY") or env.get("OPENAI_API_KEY")):
            env["EVAL_MODEL"] = "control:lexical"  # the baseline that reads descriptions
        run_id = env.pop("EVAL_RUN_ID", "") or new_run_id()  # the A/B's own id is named after it
        results = REPO_ROOT / EvalSettings.from_env(env).results_dir
        label = server_slug(Settings.from_env(env, warn=False).server)
        kept_path = results / "surfaces" / label / KEPT_FILE
        baseline = args.baseline or kept_path
        kept = read_surface(baseline) if baseline.is_file() else None
        if args.baseline and kept is None:
            raise ConfigError(f"--baseline {args.baseline}: no such file")
        cases = load_cases(env.get("EVAL_DATASET") or None)
    except (ConfigError, DatasetError, SurfaceChoiceError, SurfaceDocumentError, ValueError) as error:
        print(f"watch: stopping before anything ran: {error}", file=sys.stderr)
        return 2
    try:
        listed, settings = surface_now(env)
    except KeyboardInterrupt:
        print("watch: interrupted while listing the server's tools; nothing kept", file=sys.stderr)
        return 130
    except (ConfigError, SurfaceChoiceError) as error:
        print(f"watch: stopping before anything ran: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a server down or refusing: said in one line, nothing kept
        print(f"watch: could not list the tools of {label}: {describe_error(error)}", file=sys.stderr)
        return 1
    now = {tool.name: tool for tool in listed}
    taken_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    document = surface_document(listed, {"server": label, "surface": settings.surface, "taken_at": taken_at})
    plan = WatchPlan(label, run_id, results, kept_path, baseline, args.max)
    if kept is None:
        write_json(kept_path, document)
        result = WatchResult(kept=kept_path, first=True)
        say(f"{label}: no surface kept yet: kept this one ({len(now)} tools, {settings.surface}) as {kept_path}")
    elif not diff_surfaces(kept[0], now):
        result = WatchResult()
        since = kept[1].get("taken_at", "the kept one")
        say(f"{label}: no change to its {len(now)} tools since {since} ({surface_line}); nothing run")
    else:
        say(f"{label}: its tools changed since {kept[1].get('taken_at', baseline)} ({surface_line})")
        kept_document = {"snapshot": kept[1], "tools": [tool.entry() for tool in kept[0].values()]}
        try:
            result = watch(
                plan,
                kept[0],
                now,
                (kept_document, document),
                cases,
                family_of(settings.server),
                WatchRun(plan, env),
                env.get("EVAL_DATASET") or None,
            )
        except WatchError as error:
            say(f"{error}; the kept surface stays {baseline}")
            return 1
        except KeyboardInterrupt:
            say(f"interrupted; what ran is in {plan.folder}; the kept surface stays {baseline}")
            return 130
        say(f"kept the new surface as {result.kept}; this watch's record: {plan.folder}")
    if args.summary:
        with args.summary.open("a", encoding="utf-8") as summary:
            summary.write(markdown(result, label))
    print(json.dumps(result.summary(label)))
    return 0


def _served(family: str, case: Case) -> Case | None:
    """The case in the family's terms, or None for one the family cannot run."""
    try:
        return case_for(family, case)
    except CaseNotServed:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
