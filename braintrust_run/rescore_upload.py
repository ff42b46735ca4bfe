"""Log a re-scored run to Braintrust (`python -m analysis.rescore RUN --braintrust`).

One new experiment per experiment of the original run (a model, a decoy count and a scenario),
with that original as its base experiment, so Braintrust's own comparison view shows, row by row,
what today's scorers say differently. The new experiment's metadata names the original experiment
and run, and both sets of scorer versions; it carries no comparison key, so no later run ever takes
it for a base (`braintrust_run.experiments.is_base_for`). Rows are logged through the SDK's own experiment
API, and rows it drops are counted as a run's are (`braintrust_run.uploads`): any loss is exit 1.

The original experiment is found among the project's experiments by the run id, model and decoy
count its metadata names (and the scenario, in experiments that name it); none or several is said,
and the re-scored experiment is then logged without a base.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from braintrust.git_fields import GitMetadataSettings

from analysis.stored_scores import VERSIONS_KEY
from braintrust_run.experiments import braintrust_project, project_experiments, repo_info
from braintrust_run.login import sending_logs, start_login
from braintrust_run.uploads import lost_rows, watch_failed_uploads

NOT_RESCORED = ("factuality",)  # needs the judge: the re-scored experiment does not carry it


class UploadError(Exception):
    """The re-scored run could not be logged; `code` is the command's exit code (1 lost, 2 no login)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def log_in() -> None:
    """Read `.env` and the SDK's key as `python -m evals` does, before any setting is read; no key is
    an `UploadError` (exit 2) before anything is re-scored."""
    start_login()
    if not sending_logs():
        raise UploadError(2, "no Braintrust login (BRAINTRUST_API_KEY): the re-scored run cannot be logged")


def find_original(
    experiments: Sequence[Mapping[str, Any]], run_id: str, model: str, decoys: int, scenario: str
) -> tuple[Mapping[str, Any] | None, str]:
    """The experiment of the run that held these trials, and what to say about it."""
    found = []
    for item in experiments:
        metadata = item.get("metadata") or {}
        if metadata.get("run_id") != run_id or metadata.get("model") != model:
            continue
        if int(metadata.get("decoys") or 0) != decoys or metadata.get("rescored_from_run"):
            continue
        if metadata.get("scenario") not in (None, scenario):
            continue
        found.append(item)
    if len(found) == 1:
        return found[0], f"base: {found[0].get('name')}, the run's own experiment"
    if not found:
        return None, f"no experiment of run {run_id} for {model} ({scenario}) in Braintrust: logged without a base"
    names = ", ".join(str(item.get("name")) for item in found[:3])
    return None, f"several experiments of run {run_id} could be the original ({names}): logged without a base"


def log_rescored(
    run_dir: Path,
    info: Mapping[str, Any],
    groups: Mapping[tuple[str, int, str], list[dict[str, Any]]],
    versions: Mapping[str, str],
) -> list[str]:
    """Log each group of re-scored rows as an experiment (after `log_in`); one line per experiment to print."""
    import braintrust

    project = braintrust_project()
    experiments = project_experiments(project)
    listed: Sequence[Mapping[str, Any]] = () if isinstance(experiments, str) else experiments
    run_id = str(info.get("run_id") or run_dir.name)
    watch_failed_uploads(run_dir)
    lines = []
    if isinstance(experiments, str):
        lines.append(f"could not list the experiments of {project} to find the originals ({experiments})")
    for (model, decoys, scenario), rows in sorted(groups.items()):
        original, note = find_original(listed, run_id, model, decoys, scenario)
        original_id = str(original["id"]) if original else None
        original_name = str(original.get("name")) if original else None
        original_metadata = dict((original or {}).get("metadata") or {})
        metadata = {
            "rescored_from_run": run_id,
            "rescored_from_experiment": original_id,
            "rescored_from_experiment_name": original_name,
            "eval": original_metadata.get("eval"),
            "scenario": scenario,
            "model": model,
            "decoys": decoys,
            VERSIONS_KEY: dict(versions),
            "original_scorer_versions": original_metadata.get(VERSIONS_KEY) or info.get(VERSIONS_KEY),
            "not_rescored": list(NOT_RESCORED),
            "trials": len(rows),
        }
        name = f"{original_name or f'{scenario} · {model} · {run_id}'} · re-scored"
        git = repo_info()
        experiment = braintrust.init(
            project=project,
            experiment=name,
            base_experiment_id=original_id,
            metadata=metadata,
            repo_info=git,
            git_metadata_settings=None if git else GitMetadataSettings(collect="none"),
            set_current=False,
        )
        for row in rows:
            experiment.log(**row)
        summary = experiment.summarize(summarize_scores=original_id is not None)
        lines.append(f"{summary.experiment_name}: {len(rows)} re-scored trial(s) logged; {note}")
        lines.append(f"  {summary.experiment_url}")
    lost, folder = lost_rows()
    if lost:
        raise UploadError(1, f"{lost} re-scored row(s) sent to Braintrust were lost; they are kept in {folder}")
    return lines
