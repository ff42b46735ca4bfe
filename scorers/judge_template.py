"""The factuality judge's prompt and choice scores, read from a versioned template file.

Why a file: the prompt is what a calibration measures, so it is data with a version, not code.
Every factuality score records the template's `name@version`, and `make calibrate` compares
versions (and judge models) as experiments. `EVAL_JUDGE_TEMPLATE` points at another file of the
same shape to try a new prompt without editing the bundled one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.environment import process_env

BUNDLED_TEMPLATE = Path(__file__).resolve().parent / "templates" / "factuality.yaml"
CHOICES = ("A", "B", "C", "D", "E")
PLACEHOLDERS = ("{{input}}", "{{expected}}", "{{output}}")


class TemplateError(ValueError):
    """A template file that cannot be used; the message names the file and the problem."""


class JudgeTemplate(BaseModel):
    """What autoevals' `LLMClassifier` needs, plus the name and version recorded on every score."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    version: int = Field(ge=1)
    prompt: str
    choice_scores: dict[str, float]
    use_cot: bool = True

    @field_validator("choice_scores")
    @classmethod
    def _five_choices_in_unit_range(cls, scores: dict[str, float]) -> dict[str, float]:
        if sorted(scores) != list(CHOICES):
            raise ValueError(f"must map exactly the choices {', '.join(CHOICES)}, got {', '.join(sorted(scores))}")
        outside = [choice for choice, value in scores.items() if not 0 <= value <= 1]
        if outside:
            raise ValueError(f"scores must lie in [0, 1]: {', '.join(outside)}")
        return scores

    @field_validator("prompt")
    @classmethod
    def _prompt_uses_every_placeholder(cls, prompt: str) -> str:
        missing = [placeholder for placeholder in PLACEHOLDERS if placeholder not in prompt]
        if missing:
            raise ValueError(f"lacks {', '.join(missing)}")
        return prompt

    @property
    def ref(self) -> str:
        """`name@version`: what a score records, so results say which prompt produced them."""
        return f"{self.name}@{self.version}"


def template_path(env: Mapping[str, str] | None = None) -> Path:
    """`EVAL_JUDGE_TEMPLATE` when set, else the bundled template."""
    source = process_env() if env is None else env
    chosen = source.get("EVAL_JUDGE_TEMPLATE", "").strip()
    return Path(chosen) if chosen else BUNDLED_TEMPLATE


def template_files(env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The template the judge reads under `env`: its bytes are part of factuality's version
    (`scorers.versions`), so a changed prompt or choice score is a new version, bumped or not."""
    return (template_path(env),)


def load_template(path: Path | None = None) -> JudgeTemplate:
    """Read and validate a template file; any problem is a TemplateError naming the file."""
    chosen = path or template_path()
    try:
        data = yaml.safe_load(chosen.read_text(encoding="utf-8"))
    except OSError as error:
        raise TemplateError(f"judge template {chosen}: cannot read it: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise TemplateError(f"judge template {chosen}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise TemplateError(f"judge template {chosen}: expected a mapping with name, version, prompt, choice_scores")
    try:
        return JudgeTemplate.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'template'}: {item['msg']}" for item in error.errors()
        )
        raise TemplateError(f"judge template {chosen}: {problems}") from None
