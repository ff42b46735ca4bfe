"""What each Braintrust experiment says about itself: its metadata, its git state and its base.

An experiment is compared with the previous experiment of the same eval, model, server,
description variant and decoy count (its *comparison key*, kept in its metadata), not with the
project's newest one. The base is named by id: under `braintrust eval` the CLI passes
`Evaluator.base_experiment_id` to `init_experiment` but ignores `base_experiment_name`
(braintrust 0.48.1, `cli/eval.py`). The previous experiments are listed once per process through
the SDK's public REST client. Shards of one run (`EVAL_SHARD`) continue one experiment, named
after the run, and all name the same base: the newest experiment of another run.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import cache
from typing import Any

from braintrust.git_fields import GitMetadataSettings, RepoInfo
from braintrust.gitutil import get_repo_info

from evals._shard import Shard
from harness.cases import Case, dataset_hash
from harness.config import Settings
from harness.mcp.probe import model_tool_view_blocking
from harness.recording.store import git_commit
from scorers.judge import judge_settings

GIT_FIELDS = ["commit", "branch", "tag", "dirty", "commit_time"]  # never the diff, nor author emails
LISTING_PAGES = 20  # 100 experiments a page: how far back the base is looked for


def sending_logs() -> bool:
    """Experiments go to Braintrust: a key is set and the CLI was not told `--no-send-logs`."""
    return bool(os.environ.get("BRAINTRUST_API_KEY")) and "--no-send-logs" not in sys.argv


def comparison_key(eval_name: str, settings: Settings) -> str:
    """Experiments with equal keys measure the same thing and are compared with each other."""
    return f"{eval_name}|{settings.model}|{settings.server_identity}|{settings.description_variant}|{settings.decoys}"


def short_hash(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] if text else None


@cache
def _tool_view(settings: Settings) -> tuple[int, str, tuple[str, ...]] | str:
    """(tools the model sees, the view's hash, their names), asked of the server once per configuration."""
    return model_tool_view_blocking(settings)


def probed_view(settings: Settings) -> tuple[int, str, tuple[str, ...]] | str:
    """The tool view a trial under `settings` gets (any model sees the same tools), or why it is unknown."""
    return _tool_view(settings.model_copy(update={"model": "control:oracle"}))


def experiment_metadata(
    eval_name: str, settings: Settings, cases: list[Case], trials: int, shard: Shard | None
) -> dict[str, Any]:
    """Everything needed to say what an experiment measured and to reproduce it."""
    view = probed_view(settings)
    judge = judge_settings()
    return {
        "eval": eval_name,
        "model": settings.model,
        "server": settings.scrub(settings.server),
        "server_identity": settings.server_identity,  # e.g. the npm package and version it runs
        "tool_count": view if isinstance(view, str) else view[0],
        "tool_view_hash": None if isinstance(view, str) else view[1],
        "description_variant": settings.description_variant,
        "decoys": settings.decoys,
        "tool_shuffle_seed": settings.tool_shuffle_seed,
        "tool_filter": settings.tool_filter,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "max_turns": settings.max_turns,
        "system_prompt_hash": short_hash(settings.system_prompt),
        "judge_provider": judge.provider if judge else None,
        "judge_model": judge.model if judge else None,
        "trials_per_case": trials,
        "cases": len(cases),
        "dataset": os.environ.get("EVAL_DATASET") or "bundled",
        "dataset_hash": dataset_hash(cases),
        "git_commit": git_commit(),
        "run_id": settings.run_id,
        "shard": str(shard) if shard else None,
        "comparison_key": comparison_key(eval_name, settings),
    }


def repo_info() -> RepoInfo | None:
    """Commit, branch and dirty flag of the checkout (CI checkouts are detached: the branch comes from CI)."""
    info = get_repo_info(GitMetadataSettings(collect="some", fields=GIT_FIELDS))
    if info is not None and not info.branch:
        info.branch = os.environ.get("GITHUB_HEAD_REF") or os.environ.get("GITHUB_REF_NAME") or None
    return info


@cache
def _project_experiments(project: str) -> tuple[dict[str, Any], ...] | str:
    """The project's experiments, newest first (or why they could not be listed)."""
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
    except Exception as error:  # a failed lookup must not stop the run: the server's default base is used
        return f"{type(error).__name__}: {error}"
    return tuple(sorted(found, key=lambda item: str(item.get("created") or ""), reverse=True))


def base_experiment_id(project: str, metadata: dict[str, Any]) -> str | None:
    """The newest earlier experiment with the same comparison key (from another run), if any."""
    if not sending_logs():
        return None
    experiments = _project_experiments(project)
    if isinstance(experiments, str):
        print(f"evals: could not list experiments to find the base: {experiments}", file=sys.stderr)
        return None
    for experiment in experiments:
        other = experiment.get("metadata") or {}
        if other.get("comparison_key") == metadata["comparison_key"] and other.get("run_id") != metadata["run_id"]:
            return str(experiment["id"])
    return None
