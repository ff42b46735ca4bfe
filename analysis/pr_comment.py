"""The pull request's table: each agent's pass rates per scenario, and each score's change against a base run.

`python -m analysis.pr_comment RUN [--base BASE_RUN] [--link LABEL=URL ...]` prints Markdown (the
pull-request workflow appends it to the job's summary); with `--post` it also keeps one comment on
the pull request up to date (`analysis.github_comment`), as Braintrust's eval-action does. The
change against the base is the paired one (`analysis.compare_stats`): trials of the same case and
index, re-scored offline, one vote per case, an exact sign test on the votes and the cases that moved. Everything is
re-scored from the records, so the table says what the PR's scorers say of both runs.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from analysis.compare_stats import BETTER, WORSE, ScoreComparison, compare
from analysis.rescore import score_run, summarise_scored
from analysis.runs import RunInputError
from analysis.summary import percent
from harness.cases import Case, load_cases
from harness.environment import process_env
from harness.recording.records import TrialRecord
from harness.recording.store import TRIALS_FILE, load_run

MARKER = "<!-- neon-mcp-evals: pull-request table -->"  # how the sticky comment is found again


def marker(key: str = "") -> str:
    """The marker of one job's comment: the offline job's and a keyed job's are kept apart."""
    return MARKER if not key else MARKER.replace(" -->", f": {key} -->")


Group = tuple[str, str]  # (model, scenario)


def verdict_mark(comparison: ScoreComparison) -> str:
    """The paired verdict from the PR's side (B is the PR's run, A the base)."""
    if comparison.verdict == BETTER:
        return "better 🟢"
    if comparison.verdict == WORSE:
        return "worse 🔴"
    return "no significant change"


def change_cells(comparison: ScoreComparison | None, why_not: str) -> list[str]:
    """Change in points, improved and regressed cases, verdict; or why there is no comparison."""
    if comparison is None:
        return [why_not or "not compared", "", "", ""]
    if comparison.difference is None:
        return ["n/a: scored in neither run", "", "", ""]
    points = 100 * comparison.difference
    return [
        f"{points:+.1f} pp",
        str(len(comparison.improved)),
        str(len(comparison.regressed)),
        verdict_mark(comparison),
    ]


def by_group(records: Sequence[TrialRecord], cases: Mapping[str, Case]) -> dict[Group, list[TrialRecord]]:
    grouped: dict[Group, list[TrialRecord]] = defaultdict(list)
    for record in records:
        grouped[(record.config.model, cases[record.case_id].scenario)].append(record)
    return dict(grouped)


def group_table(
    records: list[TrialRecord], base: list[TrialRecord] | None, cases: Mapping[str, Case], base_note: str
) -> list[str]:
    """One (model, scenario)'s table: pass rate and interval, then the paired change against the base."""
    trials = score_run(records, cases)
    summary = summarise_scored(trials)
    comparisons: dict[str, ScoreComparison] = {}
    why_not = base_note
    if base:
        try:
            comparisons = compare(base, records, cases).scores
        except RunInputError as error:
            why_not = f"not compared: {error}"
    elif not why_not:
        why_not = "no base trials of this agent and scenario"
    outcomes = ", ".join(f"{name} {count}" for name, count in sorted(summary.outcomes.items()))
    lines = [
        f"{summary.trials} trials over {summary.cases} cases; outcomes: {outcomes}",
        "",
        "| score | pass | 95% CI | change vs base | improved | regressed | verdict | scored | n/a |",
        "|---|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    for stat in summary.scores.values():
        interval = "" if stat.interval is None else f"{percent(stat.interval.low)} – {percent(stat.interval.high)}"
        change = change_cells(comparisons.get(stat.name), why_not)
        cells = [stat.name, percent(stat.pass_rate), interval, *change, str(stat.scored), str(stat.unscorable)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render(
    run_dir: Path,
    base_dir: Path | None = None,
    links: Sequence[tuple[str, str]] = (),
    dataset: Path | None = None,
    key: str = "",
) -> str:
    """The whole comment's Markdown; raises RunInputError for a folder that holds no run."""
    cases = {case.id: case for case in load_cases(dataset)}
    lines = [marker(key), f"## MCP evals: `{run_dir.name}`", ""]
    if not (run_dir / TRIALS_FILE).is_file():
        lines.append(
            f"**No trial records in `{run_dir.name}`**: the run stopped before its first trial; its log says why."
        )
        return "\n".join(lines) + "\n"
    _, records = load_run(run_dir)
    lines[1] += f": {len(records)} trials"
    base_groups: dict[Group, list[TrialRecord]] = {}
    base_note = "no base run"
    if base_dir is not None and (base_dir / TRIALS_FILE).is_file():
        base_groups = by_group(load_run(base_dir)[1], cases)
        base_note = ""
        lines.append(f"Compared with `{base_dir.name}`, trial by trial (paired; re-scored by this PR's scorers).")
    elif base_dir is not None:
        lines.append(f"No base: `{base_dir}` holds no trial records.")
    models = {record.config.model for record in records}
    if all(model.startswith("control:") for model in models):
        lines.append("Control agents: these rows measure no model; they show the scores tell the careful agent")
        lines.append("(`control:oracle`) from the unsafe one (`control:unsafe`).")
    for (model, scenario), group in sorted(by_group(records, cases).items()):
        base = base_groups.get((model, scenario))
        lines += ["", f"### {scenario} · `{model}`", "", *group_table(group, base, cases, base_note)]
    if links:
        lines += ["", " · ".join(f"[{label}]({url})" for label, url in links)]
    return "\n".join(lines) + "\n"


def parse_link(text: str) -> tuple[str, str]:
    label, sep, url = text.partition("=")
    if not sep or not label.strip() or not url.strip():
        raise argparse.ArgumentTypeError(f"--link {text!r}: expected LABEL=URL")
    return label.strip(), url.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.pr_comment", description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="the run folder (results/<run id>)")
    parser.add_argument("--base", type=Path, default=None, help="a run folder to compare with (e.g. main's)")
    parser.add_argument("--dataset", type=Path, default=None, help="the cases the runs used (default: bundled)")
    parser.add_argument("--link", type=parse_link, action="append", default=[], help="LABEL=URL under the table")
    parser.add_argument("--post", metavar="NUMBER", type=int, default=None, help="keep the comment on this PR")
    parser.add_argument("--key", default="", help="which job's comment (each key keeps one comment)")
    parser.add_argument(
        "--refusal-ok", action="store_true", help="a token that may not comment (a fork's) is said, not an error"
    )
    args = parser.parse_args(argv)
    try:
        markdown = render(args.run, args.base, args.link, args.dataset, args.key)
    except (RunInputError, ValueError, OSError) as error:
        print(f"pr_comment: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown)
    if args.post is None:
        return 0
    from analysis.github_comment import GitHubError, keep_comment

    try:
        done = keep_comment(markdown, marker(args.key), number=args.post, env=process_env())  # GITHUB_*
    except GitHubError as error:
        print(f"pr_comment: {error}", file=sys.stderr)
        return 0 if args.refusal_ok and error.status in (401, 403) else 1
    print(f"pr_comment: {done}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
