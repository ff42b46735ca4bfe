"""Hand-labelled examples for calibrating the factuality judge (`datasets/judge/*.yaml`).

Why labels: a judge is a measuring instrument; before its scores are trusted, its choices are
compared with a careful human's on answers whose correct choice is known, including the traps
that matter for migrations (staged vs applied, cancelled vs applied, another table or column,
a confident report of a change that failed, and right facts with different ids or layout).
A bad file stops the calibration with the file, the example and the problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.cases import REPO_ROOT
from harness.environment import process_env

BUNDLED_EXAMPLES = REPO_ROOT / "datasets" / "judge"
FORMAT_VERSION = 1

Choice = Literal["A", "B", "C", "D", "E"]
Trap = Literal[
    "staged_vs_applied",  # staged on a temporary branch vs already on main
    "cancelled_vs_applied",  # the user declined vs the change applied (or the reverse)
    "wrong_target",  # another table, column, type, default or status
    "failed_change",  # the change failed, and the answer has to say so
    "ids_and_layout",  # right facts with other ids, layout, order or politeness
    "omission",  # an essential fact left out
    "addition",  # extra facts that do not contradict
    "read_answer",  # a question about the data or schema, not a change
]
TRAPS: tuple[str, ...] = Trap.__args__  # type: ignore[attr-defined]


class ExamplesError(ValueError):
    """A labelled-examples file that cannot be used; the message names the file and example."""


class JudgeExample(BaseModel):
    """One labelled judgement: what the judge sees, and the choice a careful grader makes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9-]*$")
    label: Choice
    traps: list[Trap] = Field(default_factory=list)
    conversation: list[str] = Field(min_length=1)  # the user's turns: first message, then follow-ups
    expected: str = Field(min_length=1)  # the expert answer
    submission: str = Field(min_length=1)  # the assistant's final answer under judgement
    why: str = Field(min_length=1)  # the labeller's reason, one line


class _ExamplesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    examples: list[dict[str, object]]


def _describe(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'example'}: {item['msg']}" for item in error.errors()
    )


def _load_file(path: Path) -> list[JudgeExample]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ExamplesError(f"{path}: cannot read it: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ExamplesError(f"{path}: not valid YAML: {error}") from None
    try:
        document = _ExamplesFile.model_validate(data)
    except ValidationError as error:
        raise ExamplesError(
            f"{path}: expected `version: {FORMAT_VERSION}` and `examples:` ({_describe(error)})"
        ) from None
    examples: list[JudgeExample] = []
    for number, raw in enumerate(document.examples, start=1):
        name = f"example #{number}" + (f" ({raw['id']!r})" if isinstance(raw.get("id"), str) else "")
        try:
            examples.append(JudgeExample.model_validate(raw))
        except ValidationError as error:
            raise ExamplesError(f"{path}: {name}: {_describe(error)}") from None
    return examples


def examples_path(env: dict[str, str] | None = None) -> Path:
    """`EVAL_JUDGE_DATASET` when set, else the bundled `datasets/judge/`."""
    source = process_env() if env is None else env
    chosen = source.get("EVAL_JUDGE_DATASET", "").strip()
    return Path(chosen) if chosen else BUNDLED_EXAMPLES


def load_examples(path: Path | None = None) -> list[JudgeExample]:
    """Every example of a file, or of every `*.yaml` in a folder (sorted); ids must be unique."""
    chosen = path or examples_path()
    if chosen.is_dir():
        files = sorted(chosen.glob("*.yaml"))
        if not files:
            raise ExamplesError(f"{chosen}: no *.yaml files of labelled examples")
    elif chosen.is_file():
        files = [chosen]
    else:
        raise ExamplesError(f"{chosen}: no such file or folder of labelled examples")
    seen: dict[str, Path] = {}
    examples: list[JudgeExample] = []
    for file in files:
        for example in _load_file(file):
            if example.id in seen:
                raise ExamplesError(f"{file}: example {example.id!r}: id already used in {seen[example.id]}")
            seen[example.id] = file
            examples.append(example)
    if not examples:
        raise ExamplesError(f"{chosen}: no labelled examples")
    return examples
