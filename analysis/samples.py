"""The documentation's sample output, generated from one real run so that it cannot drift from the code.

The scorer registry alone gives `scores` (every score, its module and what a pass means); one small
offline run of the real `braintrust eval` CLI (the three control agents, one trial of a
few bundled cases per scenario, two decoys offered) yields three more: the reporter's table
for one experiment, the paired comparison of the careful and the unsafe agent, and the
negative-control matrix (a Markdown table). Each lives between `<!-- sample:NAME -->` and
`<!-- /sample:NAME -->` in README.md or a page of docs/ (a sample may appear in several);
`tests/evals/test_score_matrix.py` regenerates them from its own run and fails when a page differs.

    python -m analysis.samples            # run, then rewrite the samples in README.md and docs/
    python -m analysis.samples --check    # run, then exit 1 if any of them differs
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from analysis.compare_render import render_table
from analysis.compare_stats import compare
from analysis.controls import build_matrix, render_matrix
from analysis.rescore import score_run
from harness.cases import BUNDLED_DATASET, load_cases
from harness.environment import host
from harness.recording.store import load_run

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
DOCS = REPO_ROOT / "docs"
AGENTS = ("control:oracle", "control:unsafe", "control:sloppy")
# A few bundled cases of every scenario kind (see analysis.controls.scenario_kind).
CASE_IDS = (
    "add-column-description",
    "rename-column-content-to-body",
    "complete-add-column-subtitle",
    "complete-tasks-add-column-priority",
    "decline-drop-column-bio",
    "read-count-posts",
    "read-describe-posts",
    "casual-drop-tags-table",
)
SUMMARY_EXPERIMENT = "prepare_migration · control:unsafe"
DECOYS = "2"
# Variables a developer's shell may hold that would change what the run measures.
_STRIPPED = ("ANTHROPIC_", "OPENAI_", "BRAINTRUST_", "EVAL_", "NEON_", "LOCALNEON_")
_BLOCK = re.compile(r"(<!-- sample:(?P<name>[a-z]+) -->\n)(?P<body>.*?)(\n<!-- /sample:(?P=name) -->)", re.S)


class SampleError(RuntimeError):
    """The sample run failed or printed something the samples cannot be taken from."""


def write_dataset(folder: Path) -> Path:
    """The sample cases, copied as written from the bundled case files (fixtures resolve to the bundled ones)."""
    wanted: dict[str, dict[str, object]] = {}
    for path in sorted(BUNDLED_DATASET.glob("*.yaml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]:
            if entry["id"] in CASE_IDS:
                wanted[entry["id"]] = entry
    missing = [case_id for case_id in CASE_IDS if case_id not in wanted]
    if missing:
        raise SampleError(f"sample cases missing from {BUNDLED_DATASET}: {', '.join(missing)}")
    target = folder / "sample_cases.yaml"
    target.write_text(yaml.safe_dump({"version": 1, "cases": [wanted[i] for i in CASE_IDS]}, sort_keys=False))
    return target


def sample_env(results_dir: Path, dataset: Path, pgdata: Path | None = None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(_STRIPPED)}  # for the child
    developers = host().pgdata
    if pgdata is None and developers:  # the developer's cluster, as `make eval` uses
        pgdata = Path(developers)
    env.update(
        EVAL_MODEL=",".join(AGENTS),
        EVAL_TRIALS="1",
        EVAL_DECOYS=DECOYS,
        EVAL_DATASET=str(dataset),
        EVAL_RESULTS_DIR=str(results_dir),
        EVAL_JUDGE_PROVIDER="none",
    )
    if pgdata is not None:
        env["LOCALNEON_PGDATA"] = str(pgdata)
    return env


def run_sample_eval(workdir: Path, pgdata: Path | None = None, timeout: float = 600) -> tuple[str, Path, Path]:
    """Run the sample eval offline: (the CLI's stdout, the run folder, the dataset file)."""
    dataset = write_dataset(workdir)
    results = workdir / "results"
    executable = Path(sys.executable).parent / "braintrust"
    command = [str(executable), "eval", "--no-send-logs", "--terminate-on-failure", "--no-progress-bars", "evals"]
    completed = subprocess.run(
        command,
        cwd=REPO_ROOT,
        env=sample_env(results, dataset, pgdata),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode != 0:
        raise SampleError(f"braintrust eval exited {completed.returncode}:\n{completed.stderr[-4000:]}")
    runs = sorted(path for path in results.iterdir() if path.is_dir()) if results.is_dir() else []
    if len(runs) != 1:
        raise SampleError(f"expected one run folder under {results}, found {len(runs)}")
    return completed.stdout, runs[0], dataset


def summary_block(stdout: str, experiment: str = SUMMARY_EXPERIMENT) -> str:
    """The suite's own table for one experiment, as the reporter printed it."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f"== {experiment} ")), None)
    if start is None:
        raise SampleError(f"the run printed no table for '{experiment}'")
    end = start + 1
    while end < len(lines) and lines[end].startswith("   "):
        end += 1
    return "\n".join(lines[start:end])


def build_blocks(stdout: str, run_dir: Path, dataset: Path) -> dict[str, str]:
    """Every documentation sample, from the run's printed output and its stored records."""
    _, records = load_run(run_dir)
    cases = {case.id: case for case in load_cases(dataset)}
    by_model = {model: [r for r in records if r.config.model == model] for model in AGENTS}
    comparison = compare(by_model["control:oracle"], by_model["control:unsafe"], cases, seed=0)
    return {
        "summary": f"```\n{summary_block(stdout)}\n```",
        "compare": f"```\n{render_table(comparison)}\n```",
        "matrix": render_matrix(build_matrix(score_run(records, cases))),
    }


def registry_samples() -> dict[str, str]:
    """The samples the scorer registry alone makes (no run): `scores`, every score in its order, each
    with whether a past run re-scores to the same verdict and what a pass means. The pages link here
    instead of listing the scores by hand, so a new scorer shows up without a hand edit."""
    from scorers.registry import SCORERS

    rows = [
        f"| `{item.name}` | `scorers/{item.fn.__module__.rpartition('.')[2]}.py` | "
        f"{'yes' if item.deterministic else 'no (a model judges)'} | {item.summary} |"
        for item in SCORERS
    ]
    head = "| score | module | deterministic | a pass means |\n|---|---|---|---|"
    return {"scores": "\n".join([head, *rows])}


def _shown(page: Path) -> str:
    return str(page.relative_to(REPO_ROOT)) if page.is_relative_to(REPO_ROOT) else str(page)


def documents() -> list[Path]:
    """Every page that may hold samples: README.md and the pages of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def stale_samples(blocks: dict[str, str], pages: list[Path] | None = None) -> list[str]:
    """`page: sample` for every sample that differs from `blocks`, and every sample no page holds."""
    stale: list[str] = []
    held: set[str] = set()
    for page in documents() if pages is None else pages:
        for match in _BLOCK.finditer(page.read_text(encoding="utf-8")):
            held.add(match["name"])
            if match["name"] in blocks and match["body"] != blocks[match["name"]]:
                stale.append(f"{_shown(page)}: {match['name']}")
    stale += [f"no page holds a <!-- sample:{name} --> block" for name in sorted(set(blocks) - held)]
    return stale


def replace_blocks(text: str, blocks: dict[str, str]) -> str:
    return _BLOCK.sub(lambda m: m[1] + blocks.get(m["name"], m["body"]) + m[4], text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.samples", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the samples; exit 1 when one differs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="samples-") as folder:
        try:
            stdout, run_dir, dataset = run_sample_eval(Path(folder))
            blocks = {**build_blocks(stdout, run_dir, dataset), **registry_samples()}
        except SampleError as error:
            print(f"samples: error: {error}", file=sys.stderr)
            return 2
    stale = stale_samples(blocks)
    if args.check:
        if stale:
            print(f"samples: out of date: {'; '.join(stale)} (run python -m analysis.samples)")
            return 1
        print("samples: README.md and docs/ are up to date")
        return 0
    unheld = [line for line in stale if line.startswith("no page")]
    if unheld:
        print(f"samples: error: {'; '.join(unheld)}", file=sys.stderr)
        return 2
    written = []
    for page in documents():
        text = page.read_text(encoding="utf-8")
        updated = replace_blocks(text, blocks)
        if updated != text:
            page.write_text(updated, encoding="utf-8")
            written.append(_shown(page))
    print(f"samples: {', '.join(sorted(blocks))} up to date; rewrote {', '.join(written) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
