"""What each Braintrust experiment says about itself: its metadata, its git state and its base.

An experiment is compared with an earlier experiment of the same eval, model, server, description
variant and decoy count (its *comparison key*, kept in its metadata), never with the project's
newest one, which is often another model's from the same run. The base is named by id: under
`braintrust eval` the CLI passes `Evaluator.base_experiment_id` to `init_experiment` but ignores
`base_experiment_name` (braintrust 0.48.1, `cli/eval.py`). When there is no such experiment, no
base id is sent and the repository info is passed explicitly (so the SDK sends no
`ancestor_commits` for the server to pick a base by), and the Braintrust summary is not asked to
compare (`summarize_scores=False`): Braintrust's summary endpoint, given no comparison id, falls
back to the stored base and then to the project's newest experiment (`Experiment.summarize`).

Partial runs (a `--filter`, a shard's share, adaptive rounds, an A/B arm, the playground) say so
in `partial` and are never chosen as a base; a sharded run's experiments become bases once every
shard's share is merged (`braintrust_run.shards_merged`). The previous experiments are listed once per process
through the SDK's public REST client. Shards of one run (`EVAL_SHARD`) continue one experiment,
named after the run, and all name the same base: the newest complete experiment of another run.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from braintrust.git_fields import GitMetadataSettings, RepoInfo
from braintrust.gitutil import get_repo_info

from braintrust_run.login import cli_flags, sending_logs
from braintrust_run.run_state import this_run
from braintrust_run.settings import current
from braintrust_run.shard import Shard
from harness.cases import Case, dataset_hash
from harness.config import Settings
from harness.mcp.probe import model_tool_view_blocking
from harness.recording.store import git_commit
from scorers.judge_client import judge_settings
from scorers.registry import SCORERS
from scorers.versions import scorer_versions

__all__ = ("sending_logs",)
GIT_FIELDS = ("commit", "branch", "tag", "dirty", "commit_time")  # never the diff, nor author emails
LISTING_PAGES = 20  # 100 experiments a page: how far back the base is looked for
NO_BASE = "no earlier complete experiment with the same model/server/variant"


def braintrust_project() -> str:
    """The Braintrust project every experiment and dataset of the suite goes to (`EVAL_PROJECT`)."""
    return current().project


def comparison_key(eval_name: str, settings: Settings) -> str:
    """Experiments with equal keys measure the same thing and are compared with each other."""
    key = f"{eval_name}|{settings.model}|{settings.server_identity}|{settings.description_variant}|{settings.decoys}"
    # Words the tools wore other than the twin's own are part of what was measured (the default since
    # the twin wears Neon's published surface): such a run is compared only with one in the same words.
    return key if settings.server_surface is None else f"{key}|{settings.surface}"


def short_hash(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] if text else None


def _tool_view(settings: Settings) -> tuple[int, str, tuple[str, ...]] | str:
    """(tools the model sees, the view's hash, their names), asked of the server once per configuration."""
    views = this_run().tool_views
    if settings not in views:
        views[settings] = model_tool_view_blocking(settings)
    return views[settings]


def probed_view(settings: Settings) -> tuple[int, str, tuple[str, ...]] | str:
    """The tool view a trial under `settings` gets (any model sees the same tools), or why it is unknown."""
    return _tool_view(settings.model_copy(update={"model": "control:oracle"}))


def add_tool_view(metadata: dict[str, Any], settings: Settings) -> None:
    """Fill in the tool count and view hash, which need the server: at the run's start, not at import."""
    view = probed_view(settings)
    metadata["tool_count"] = view if isinstance(view, str) else view[0]
    metadata["tool_view_hash"] = None if isinstance(view, str) else view[1]


def add_scorer_versions(metadata: dict[str, Any]) -> None:
    """Name the version of every scorer that will score this experiment (`scorers.versions`): read
    from the source, so at the run's start, not when `--list` imports the evals."""
    metadata["scorer_versions"] = scorer_versions(SCORERS)


def partial_reason(shard: Shard | None, env: Mapping[str, str] | None = None) -> str | None:
    """Why this process's experiment will not hold every trial of the plan (None: it will); `env` is the
    run's settings (default: this process's)."""
    env = current().env if env is None else env
    flags = cli_flags()
    reasons = []
    if flags is not None and flags.filters:
        reasons.append("filter " + " ".join(flags.filters))
    if shard is not None:
        reasons.append(f"shard {shard}")
    if env.get("EVAL_TRIALS", "").strip().lower().startswith("adaptive"):
        reasons.append("adaptive rounds")
    if env.get("EVAL_AB_A", "").strip() or env.get("EVAL_AB_B", "").strip():
        reasons.append("A/B arm")
    if flags is not None and flags.dev:
        reasons.append("playground")
    return "; ".join(reasons) or None


def experiment_metadata(
    eval_name: str, settings: Settings, cases: list[Case], trials: int, shard: Shard | None
) -> dict[str, Any]:
    """Everything needed to say what an experiment measured and to reproduce it (the tool view is
    added when the run starts, `add_tool_view`; the base by `comparison_arguments`)."""
    judge = judge_settings()
    tuning = current().tune_context
    return {
        **({"tuning": tuning} if tuning else {}),  # a tuning run's child: its part, incumbent and candidate
        "eval": eval_name,
        "scenario": cases[0].scenario if cases else None,
        "model": settings.model,
        "server": settings.scrub(settings.server),
        "server_identity": settings.server_identity,  # e.g. the npm package and version it runs
        "tool_count": None,
        "tool_view_hash": None,
        "description_variant": settings.description_variant,
        "surface": settings.surface,  # whose words the tool descriptions were (docs/local-twin.md)
        "decoys": settings.decoys,
        "tool_shuffle_seed": settings.tool_shuffle_seed,
        "tool_filter": settings.tool_filter,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "max_turns": settings.max_turns,
        "system_prompt_hash": short_hash(settings.system_prompt),
        "judge_provider": judge.provider if judge else None,
        "judge_model": judge.model if judge else None,
        "scorer_versions": None,  # {score: version} of the scorers that score it, at the run's start
        "trials_per_case": trials,
        "cases": len(cases),
        "dataset": current().dataset_label,
        "dataset_hash": dataset_hash(cases),
        "braintrust_dataset": None,  # keyed runs: the pushed dataset these cases are (braintrust_run.dataset), at start
        "git_commit": git_commit(),
        "run_id": settings.run_id,
        "shard": str(shard) if shard else None,
        "partial": partial_reason(shard),
        "comparison_key": comparison_key(eval_name, settings),
    }


def repo_info() -> RepoInfo | None:
    """Commit, branch and dirty flag of the checkout (CI checkouts are detached: the branch comes from CI)."""
    info = get_repo_info(GitMetadataSettings(collect="some", fields=list(GIT_FIELDS)))
    if info is not None and not info.branch:
        info.branch = current().ci_branch
    return info


def project_experiments(project: str) -> tuple[dict[str, Any], ...] | str:
    """The project's experiments, newest first (or why they could not be listed), asked once per run."""
    listings = this_run().experiment_listings
    if project not in listings:
        listings[project] = _list_experiments(project)
    return listings[project]


def _list_experiments(project: str) -> tuple[dict[str, Any], ...] | str:
    from braintrust.api import BraintrustClient

    found: list[dict[str, Any]] = []
    try:
        with BraintrustClient() as client:
            client.auth.login()
            cursor: str | None = None
            for _ in range(LISTING_PAGES):
                page = client.openapi.experiments.get_experiment(project_name=project, limit=100, starting_after=cursor)
                objects = [dict(item) for item in page.get("objects") or []]
                found.extend(objects)
                if len(objects) < 100:
                    break
                cursor = str(objects[-1]["id"])
    except Exception as error:  # a failed lookup must not stop the run: it runs without a comparison
        return f"{type(error).__name__}: {error}"
    return tuple(sorted(found, key=lambda item: str(item.get("created") or ""), reverse=True))


@dataclass(frozen=True)
class Base:
    """The experiment to compare with (None: no comparison), and what to say about it."""

    experiment_id: str | None
    note: str


def is_complete(metadata: dict[str, Any]) -> bool:
    """No `partial` mark, or only shards' ones on an experiment whose shards were all merged
    (`python -m braintrust_run.shards_merged` adds `shards_merged` once every shard recorded its share)."""
    partial = str(metadata.get("partial") or "")
    if not partial:
        return True
    only_shards = all(reason.startswith("shard ") for reason in partial.split("; "))
    return only_shards and bool(metadata.get("shards_merged"))


def is_base_for(candidate: dict[str, Any], metadata: dict[str, Any]) -> bool:
    """A like-for-like base: same comparison key, another run, and complete (`is_complete`)."""
    other = candidate.get("metadata") or {}
    return (
        other.get("comparison_key") == metadata["comparison_key"]
        and other.get("run_id") != metadata["run_id"]
        and is_complete(other)
    )


def find_base(project: str, metadata: dict[str, Any]) -> Base:
    """The newest earlier complete experiment with the same comparison key, or why there is none."""
    if not sending_logs():
        return Base(None, "not sent to Braintrust")
    experiments = project_experiments(project)
    if isinstance(experiments, str):
        return Base(None, f"could not list experiments to find the base ({experiments})")
    found = next((item for item in experiments if is_base_for(item, metadata)), None)
    if found is None:
        return Base(None, NO_BASE)
    return Base(str(found["id"]), f"compared with {found.get('name')}, the newest earlier complete one")


def comparison_arguments(project: str, title: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """`Eval(...)` arguments that compare like with like, or not at all, and carry the git info; the
    choice goes into `metadata` and, when there is no base, on stderr.

    Nothing is left for Braintrust to choose a base by: the repository info is explicit, or git
    collection is off (the SDK would otherwise send `ancestor_commits`), and without a base the
    summary is not asked to compare."""
    base = find_base(project, metadata)
    metadata["base_experiment_id"] = base.experiment_id
    metadata["comparison"] = base.note if base.experiment_id else f"none: {base.note}"
    if base.experiment_id is None and sending_logs():
        print(f"evals: {title}: {base.note}: no comparison", file=sys.stderr, flush=True)
    git = repo_info() if sending_logs() else None
    flags = cli_flags()
    return {
        "base_experiment_id": base.experiment_id,
        # The playground's reply carries the summary's scores; its runs compare with its own earlier ones.
        "summarize_scores": base.experiment_id is not None or (flags is not None and flags.dev),
        "repo_info": git,
        "git_metadata_settings": None if git else GitMetadataSettings(collect="none"),
    }


def experiment_id_of(span: Any) -> str | None:
    """The id of the experiment a span logs to (the SDK's documented parse of `Span.export()`), or None."""
    from braintrust.span_identifier_v3 import SpanObjectTypeV3
    from braintrust.span_identifier_v4 import SpanComponentsV4

    try:
        exported = span.export()
        components = SpanComponentsV4.from_str(exported) if exported else None
    except Exception:  # a local or no-op span: no experiment to update
        return None
    if components is None or components.object_type != SpanObjectTypeV3.EXPERIMENT:
        return None
    return components.object_id


def patch_metadata(experiment_id: str, metadata: dict[str, Any]) -> str | None:
    """`PATCH /v1/experiment/{id}` with `metadata` (Braintrust deep-merges it into the stored one);
    None when done, else why not."""
    from braintrust.api import BraintrustClient

    try:
        with BraintrustClient() as client:
            client.auth.login()
            client.openapi.experiments.patch_experiment_id(experiment_id, body={"metadata": metadata})
    except Exception as error:  # the caller says what it means for its run
        return f"{type(error).__name__}: {error}"
    return None


def publish_metadata(experiment_id: str, metadata: dict[str, Any]) -> None:
    """Send the experiment's metadata again, now complete.

    Why: under `braintrust eval` the SDK registers each experiment before its data is read
    (braintrust 0.48.1 `framework.init_experiment` summarizes it at once), so what the run's start
    learns (the tool count and view hash) would otherwise never reach Braintrust."""
    error = patch_metadata(experiment_id, metadata)
    if error is not None:  # the trials matter more than a field of the metadata
        print(f"evals: could not update the metadata of experiment {experiment_id}: {error}", file=sys.stderr)
