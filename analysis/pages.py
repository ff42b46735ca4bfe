"""The Jinja2 environment every HTML page renders with: autoescaping on, templates beside this file.

Why a template engine: whatever a record holds (a model's answer, a case id, a diff) is escaped by
default, not by a rule each f-string has to remember. Pictures come in as SVG from `analysis.charts`
and are the only values marked safe.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_page(template: str, **values: Any) -> str:
    return environment().get_template(template).render(**values)
