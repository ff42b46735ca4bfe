"""What Braintrust's playground (`braintrust eval --dev evals/`) can choose, and the rows it sends.

Every `Eval` declares `parameters`: the model, the server under test (the one `--dev` was started
with, the local twin, or Neon's npm server beside it), the tool-description variant and the decoy
count, each defaulting to what the experiment was defined with, so a plain run is unchanged. The
dev server validates a request's parameters against them and hands them to the task
(`hooks.parameters`), which runs the trial under those settings (`settings_for`). The trial count
is the one `--dev` was started with (`EVAL_TRIALS`): braintrust 0.48.1's dev server takes it from
the registered evaluator, not from the request.

A row the playground sends is a case: one this process loaded (by `metadata.case_id`), or a row of a
Braintrust dataset (`python -m braintrust_run.dataset push` writes them, a user may add one in the UI) that
carries its case in `metadata.case` and is validated as a case file's entry is
(`harness.case_rows`). A row that is not a runnable case of this eval's scenario fails its task with
`RowError`, and the reason goes into the reply as the protocol's `error` progress event, so the
playground shows it beside the row instead of an empty score.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, JsonValue, field_validator

from harness.case_rows import case_from_row
from harness.cases import REPO_ROOT, Case, DatasetError
from harness.config import ConfigError, Settings
from harness.mcp.toolview import DECOYS

VARIANTS = REPO_ROOT / "datasets" / "variants"  # description variants the playground can name


class RowError(ValueError):
    """A row the suite cannot run as a case of this eval."""


def _variant_names() -> list[str]:
    return ["default", *sorted(path.stem for path in VARIANTS.glob("*.yaml"))]


def _variant_of(settings: Settings) -> str:
    return settings.tool_descriptions.stem if settings.tool_descriptions else "default"


def _one_of(value: str, choices: list[str]) -> str:
    if value not in choices:
        raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
    return value


def parameters(settings: Settings) -> dict[str, type[BaseModel]]:
    """The `Eval(parameters=...)` of an experiment run under `settings` (defaults: its own)."""
    variant = _variant_of(settings)

    class Model(BaseModel):
        value: str = Field(
            default=settings.model,
            description="The model under test, as EVAL_MODEL names one (anthropic:<name>, control:oracle, ...)",
        )

    class DescriptionVariant(BaseModel):
        value: str = Field(
            default=variant,
            description="Tool descriptions shown to the model: the server's own, or a file of datasets/variants/",
            json_schema_extra={"enum": list[JsonValue](_variant_names())},
        )

        @field_validator("value")
        @classmethod
        def known(cls, value: str) -> str:
            return _one_of(value, _variant_names())

    class Server(BaseModel):
        value: str = Field(
            default=_started(settings),
            description="The server under test: the one --dev was started with, the local twin, or Neon's npm server",
            json_schema_extra={"enum": list[JsonValue](_server_choices(settings))},
        )

        @field_validator("value")
        @classmethod
        def known(cls, value: str) -> str:
            return _one_of(value, _server_choices(settings))

    class Decoys(BaseModel):
        value: int = Field(
            default=settings.decoys, ge=0, le=len(DECOYS), description="Decoy tools added to the server's list"
        )

    return {"model": Model, "server": Server, "description_variant": DescriptionVariant, "decoys": Decoys}


AS_STARTED = "as started"  # the server --dev was started with, when it is not one of the named ones
NAMED_SERVERS = ("local", "neon-npm")  # the twin, and Neon's published server over stdio beside it


def _started(settings: Settings) -> str:
    return settings.server if settings.server in NAMED_SERVERS else AS_STARTED


def _server_choices(settings: Settings) -> list[str]:
    return list(dict.fromkeys([_started(settings), *NAMED_SERVERS]))


@cache
def _settings_for(base: Settings, model: str, server: str, variant: str, decoys: int) -> Settings:
    update: dict[str, Any] = {"tool_descriptions": variant_path(variant), "decoys": decoys}
    if server != AS_STARTED:
        update["server"] = server
    chosen = base.model_copy(update=update)
    return chosen if model == base.model else chosen.for_model(model)


def settings_for(base: Settings, chosen: dict[str, Any] | None) -> Settings:
    """`base` with the playground's choices applied (none, or the defaults: `base` itself)."""
    if not chosen:
        return base
    current = _variant_of(base)
    model = str(chosen.get("model", base.model))
    server = str(chosen.get("server", _started(base)))
    variant = str(chosen.get("description_variant", current))
    decoys = int(chosen.get("decoys", base.decoys))
    if (model, server, variant, decoys) == (base.model, _started(base), current, base.decoys):
        return base
    if server == "neon-npm" and shutil.which("node") is None:
        raise RowError("parameter server: neon-npm runs Neon's npm server on Node.js, which this machine lacks")
    try:
        return _settings_for(base, model, server, variant, decoys)
    except ConfigError as error:
        raise RowError(f"parameter model: {error}") from None


def row_case(loaded: dict[str, Case], input: Any, expected: Any, metadata: dict[str, Any], scenario: str) -> Case:
    """The case a row stands for: a loaded one, or the one the row carries (validated)."""
    case_id = metadata.get("case_id")
    where = f"row {case_id!r}" if case_id else "a row without metadata.case_id"
    if "case" not in metadata and isinstance(case_id, str) and case_id in loaded:
        return loaded[case_id]
    if "case" not in metadata:
        known = ", ".join(sorted(loaded)[:5]) + (", ..." if len(loaded) > 5 else "")
        raise RowError(
            f"{where}: not a case of this eval ({known}) and no case in metadata.case; rows of a dataset made by "
            "`python -m braintrust_run.dataset push` carry one"
        )
    try:
        case = case_from_row(input, expected, metadata, where)
    except DatasetError as error:
        raise RowError(str(error)) from None
    if case.scenario != scenario:
        raise RowError(f"{where}: a '{case.scenario}' case; this eval runs '{scenario}' cases")
    same = loaded.get(case.id)
    return same if same is not None and same.content_hash() == case.content_hash() else case


def report_row_error(hooks: Any, error: RowError) -> None:
    """Put the reason in the playground's reply (an `error` progress event; a no-op outside `--dev`)."""
    report = getattr(hooks, "report_progress", None)
    if callable(report):
        report({"format": "code", "output_type": "completion", "event": "error", "data": str(error)})


def variant_path(name: str) -> Path | None:
    return None if name == "default" else VARIANTS / f"{name}.yaml"
