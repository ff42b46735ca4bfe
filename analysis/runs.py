"""Reading past runs for the analysis commands: resolve a run argument, load its records, pick a model.

Kept apart from the statistics and the rendering so `analysis.compare`, `analysis.report` (and any
later command) load runs the same way and fail the same way: a `RunInputError` naming the problem,
which every CLI turns into exit code 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.environment import host
from harness.recording.records import TrialRecord
from harness.recording.store import TRIALS_FILE, load_run


class RunInputError(ValueError):
    """Input the analysis cannot use (a bad path, an empty run, an unknown model or case)."""


@dataclass(frozen=True)
class Group:
    """A set of trials chosen from one run: the run it came from and the model it ran."""

    path: Path
    model: str
    variants: list[str]
    records: list[TrialRecord]
    info: dict[str, Any] = field(default_factory=dict)  # the run's run.json

    @property
    def label(self) -> str:
        return f"{self.path} (model {self.model}, descriptions {', '.join(self.variants)}, {len(self.records)} trials)"


def resolve_run(argument: str) -> Path:
    """A run folder or trials.jsonl, or a run id under EVAL_RESULTS_DIR (default `results/`)."""
    path = Path(argument)
    if path.exists():
        return path
    under_results = host().results_dir / argument
    if under_results.exists():
        return under_results
    raise RunInputError(f"{argument}: no such run folder or {TRIALS_FILE} (nor {under_results})")


def load_records(argument: str) -> tuple[Path, dict[str, Any], list[TrialRecord]]:
    """A run's path, run.json and records; a missing, unreadable or empty run is a `RunInputError`."""
    path = resolve_run(argument)
    try:
        info, records = load_run(path)
    except (OSError, ValueError) as error:
        raise RunInputError(f"{path}: cannot read the run: {error}") from error
    if not records:
        trials = path if path.is_file() else path / TRIALS_FILE
        raise RunInputError(f"{path}: the run has no trials ({trials} is missing or empty)")
    return path, info, records


def run_folder(path: Path) -> Path:
    """The folder of a run given as its folder or its trials.jsonl."""
    return path.parent if path.is_file() else path


def load_group(argument: str, model: str | None, option: str) -> Group:
    """The trials of one run, restricted to one model (required when the run holds several; `option`
    names the command-line option that chooses it, for the error message)."""
    path, info, records = load_records(argument)
    models = sorted({record.config.model for record in records})
    if model is None:
        if len(models) > 1:
            raise RunInputError(
                f"{path}: the run holds several models ({', '.join(models)}): choose one with --{option}"
            )
        model = models[0]
    chosen = [record for record in records if record.config.model == model]
    if not chosen:
        raise RunInputError(f"{path}: no trials of model '{model}' (the run has {', '.join(models)})")
    variants = sorted({record.config.description_variant for record in chosen})
    return Group(path, model, variants, chosen, info)
