"""The workflows' jobs as GitHub would run them: each step's environment with its `${{ }}`
expressions evaluated, so a test can run a step's own command with the env the workflow gives it.

Only the expression forms the workflows use are understood (a context value, a quoted literal, and
`a || b`); anything else raises, so a workflow that grows a new form fails here instead of being
run with a value GitHub would not give.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.evals.cli import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# Contexts a repository may leave empty: an unset secret or variable is "" on GitHub.
OPTIONAL = ("secrets.", "vars.")


def load(name: str) -> dict[str, Any]:
    """A workflow file as data (`on` stays a string key: PyYAML reads a bare `on` as True)."""
    document = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    if True in document:
        document["on"] = document.pop(True)
    return dict(document)


def _operand(text: str, context: Mapping[str, str]) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    if text in context:
        return context[text]
    if text.startswith(OPTIONAL):
        return ""
    raise KeyError(f"the workflow uses {text!r}, which this test does not know how to evaluate")


def evaluate(text: str, context: Mapping[str, str]) -> str:
    """`text` with every `${{ a || 'b' }}` replaced as GitHub would: the first non-empty operand."""

    def one(match: re.Match[str]) -> str:
        return next((value for part in match[1].split("||") if (value := _operand(part, context))), "")

    return EXPRESSION.sub(one, text)


def step(job: dict[str, Any], name: str) -> dict[str, Any]:
    """The step of `job` whose name starts with `name`."""
    found = [item for item in job["steps"] if str(item.get("name", "")).startswith(name)]
    assert len(found) == 1, f"no single step named {name!r} in {[item.get('name') for item in job['steps']]}"
    return dict(found[0])


def step_env(job: dict[str, Any], name: str, context: Mapping[str, str]) -> dict[str, str]:
    """The job's env and the step's, evaluated: exactly the variables GitHub sets for the step."""
    raw = {**job.get("env", {}), **step(job, name).get("env", {})}
    return {key: evaluate(str(value), context) for key, value in raw.items()}


def run_script(job: dict[str, Any], name: str, context: Mapping[str, str]) -> str:
    """The step's `run:` script with its expressions evaluated."""
    return evaluate(str(step(job, name)["run"]), context)


def workflow_path(name: str) -> Path:
    return WORKFLOWS / name
