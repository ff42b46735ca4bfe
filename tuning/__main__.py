"""`make tune [FROM=<variant file>]`: tune the tool descriptions the model reads, under the acceptance rule.

    python -m tuning [--from VARIANT] [--seed SEED] [--max-candidates 5] [--max 3] [--train-trials 1]
                     [--margin 0.02] [--candidate VARIANT ...] [--out DIR]

Splits the cases (EVAL_DATASET, or the bundled ones) by `--seed`, runs the incumbent (the FROM
variant over the surface the run wears, or that surface alone) on the train part, proposes rewrites
of the tool its train failures misuse (the offline proposer's operators), compares each with the
incumbent on the validation part through `python -m evals.ab`, keeps the ones the acceptance rule
accepts, and runs the finalist once against the start on the confirmation part. With no model key
and no EVAL_MODEL, every run plays `control:lexical`, the baseline that reads descriptions. Ends
with one JSON line: `{"tune": {"candidates_tried", "accepted", "confirmed", "variant", "refused"}}`.
Exit codes: 0 the loop ran (whatever it accepted), 2 a bad setting, else a run's own failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from braintrust_run.doors import RESOLVED, wear_surface
from braintrust_run.settings import EvalSettings, launch_environment
from harness.cases import DatasetError, load_cases
from harness.config import ConfigError, Settings, new_run_id
from harness.mcp.probe import model_tool_descriptions
from harness.mcp.toolview import load_overrides
from harness.run.shared import close_shared_runners
from harness.servers.neon.surface_label import SurfaceChoiceError
from tuning.loop import REPO_ROOT, Proposer, TuneError, TunePlan, TuneRun, tune
from tuning.model_proposer import ProposerAnswerError, ProposerRoute, no_route_reason, preflight, propose_with_model
from tuning.splits import split_cases


def read_variant(path: Path) -> dict[str, str]:
    """A variant file, read as a run reads EVAL_TOOL_DESCRIPTIONS (`load_overrides`); ConfigError
    naming the file otherwise."""
    try:
        return load_overrides(path)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise ConfigError(f"{path}: not a readable YAML mapping of tool name to description ({error})") from None


def surface_descriptions(env: Mapping[str, str]) -> dict[str, str]:
    """Every tool's description as the server under test gives it (the worn surface, no overrides)."""

    async def ask() -> dict[str, str]:
        try:
            return await model_tool_descriptions(Settings.from_env(env, warn=False))
        finally:
            await close_shared_runners()

    return asyncio.run(ask())


def model_proposer(route: ProposerRoute) -> Proposer:
    """The loop's proposer when a model route is set: the model reads the train trials (only those)."""

    return lambda current, trained, splits, limit, spent: propose_with_model(
        current, trained, splits, limit, route, spent=spent
    )


def confirming(run_models: Sequence[str], more: Sequence[str]) -> tuple[str, ...]:
    """The models the finalist is confirmed with: every model the run names, then `--confirm-model`'s
    (each once); () when that is the run's one model alone (the children's own EVAL_MODEL)."""
    models = tuple(dict.fromkeys([*(run_models or [""]), *more]))  # "": the model the run takes by default
    return models if len(models) > 1 else ()


AGAIN_SETTINGS = (
    "EVAL_MODEL",
    "EVAL_SERVER",
    "EVAL_SURFACE",
    "EVAL_DATASET",
    "EVAL_ADAPTIVE_ALPHA",
    "EVAL_ADAPTIVE_MARGIN",
)


def again_command(env: Mapping[str, str], argv: Sequence[str]) -> str:
    """The one command that runs this tuning again: the settings that shape it, then the same arguments."""
    settings = [f"{name}={shlex.quote(env[name])}" for name in AGAIN_SETTINGS if env.get(name)]
    return " ".join([*settings, "python", "-m", "tuning", *(shlex.quote(arg) for arg in argv)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuning", description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="start", type=Path, help="the variant file to start from (default: none)")
    parser.add_argument("--seed", default="tune", help="the split's seed (default: tune)")
    parser.add_argument("--max-candidates", type=int, default=5, help="candidates tried at most (default 5)")
    parser.add_argument("--max", type=int, default=3, help="trials per case in a comparison, at most (default 3)")
    parser.add_argument("--train-trials", type=int, default=1, help="trials per train case (default 1)")
    parser.add_argument(
        "--candidate",
        action="append",
        default=[],
        type=Path,
        metavar="VARIANT",
        help="a rewrite of your own to try first, under the same rule (repeatable)",
    )
    parser.add_argument(
        "--margin", type=float, default=0.02, help="how far a harm's bound may exceed the incumbent's rate (0.02)"
    )
    parser.add_argument(
        "--out", type=Path, default=REPO_ROOT / "datasets" / "variants", help="where the finalist's variant file goes"
    )
    parser.add_argument(
        "--confirm-model",
        action="append",
        default=[],
        metavar="PROVIDER:MODEL",
        help="confirm the finalist with this model too (repeatable; default: the run's model alone)",
    )
    parser.add_argument("--budget-usd", type=float, help="stop before a candidate that would pass this spend")
    parser.add_argument("--max-trials-total", type=int, help="stop before a candidate that would pass this many trials")
    given_argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(given_argv)
    env = launch_environment(REPO_ROOT / ".env")
    try:
        print(f"tune: {wear_surface(env)}", file=sys.stderr, flush=True)
        env[RESOLVED] = "1"
        if not env.get("EVAL_MODEL") and not (env.get("ANTHROPIC_API_KEY") or env.get("OPENAI_API_KEY")):
            env["EVAL_MODEL"] = "control:lexical"
            print("tune: no model key and no EVAL_MODEL: every run plays control:lexical", file=sys.stderr)
        named = [model.strip() for model in env.get("EVAL_MODEL", "").split(",") if model.strip()]
        if len(named) > 1:  # the search runs one model (pairs are per case and trial); every one confirms
            env["EVAL_MODEL"] = named[0]
            say = f"tune: the search runs {named[0]}; the finalist is confirmed with each of {', '.join(named)}"
            print(say, file=sys.stderr)
        start = read_variant(args.start) if args.start else {}
        given = {path.stem: read_variant(path) for path in args.candidate}
        cases = load_cases(env.get("EVAL_DATASET") or None)
        splits = split_cases(cases, seed=args.seed)
        run_id = env.setdefault("EVAL_RUN_ID", new_run_id())
        env.pop("EVAL_RUN_ID")  # each child run gets its own id, named after this one
        route = ProposerRoute.from_env(env)
        if route is not None:
            preflight(route)  # a refusing route stops the run here, before the train run
        surface = surface_descriptions(env)
    except (ConfigError, DatasetError, SurfaceChoiceError, ValueError) as error:
        print(f"tune: stopping before any trial: {error}", file=sys.stderr)
        return 2
    plan = TunePlan(
        run_id=run_id,
        seed=args.seed,
        start=start,
        start_name=str(args.start) if args.start else "the surface the run wears",
        max_candidates=args.max_candidates,
        train_trials=args.train_trials,
        max_trials=args.max,
        variants_dir=args.out,
        margin=args.margin,
        given=given,
        command=again_command(env, given_argv),
        model=env.get("EVAL_MODEL", ""),
        budget_usd=args.budget_usd,
        max_total_trials=args.max_trials_total,
        confirm_models=confirming(named, args.confirm_model),
    )
    results = REPO_ROOT / EvalSettings.from_env(env).results_dir
    print(
        f"tune: split by seed {args.seed}: {len(splits.train)} train, {len(splits.validation)} validation, "
        f"{len(splits.confirmation)} confirmation cases",
        file=sys.stderr,
        flush=True,
    )
    print(f"tune: proposer: {route.label if route else no_route_reason(env) + '; the edit operators'}", file=sys.stderr)
    try:
        result = tune(
            plan,
            splits,
            {case.id: case for case in cases},
            lambda over: {**surface, **over},
            TuneRun(plan, env, results),
            model_proposer(route) if route else None,
        )
    except (TuneError, ProposerAnswerError) as error:
        print(f"tune: {error}; what ran so far is in {results / f'{run_id}-tune'}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"tune: interrupted; what ran so far is in {results / f'{run_id}-tune'}", file=sys.stderr)
        return 130
    print(json.dumps(result.summary()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
