"""Loading tool descriptions: the default YAML file, optionally overridden by a variant file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localneon import settings

DEFAULT_FILE = Path(__file__).resolve().parents[1] / "descriptions" / "default.yaml"


@dataclass
class ToolText:
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _read(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of tool name to description")
    return data


def _merge(texts: dict[str, ToolText], data: dict[str, Any], source: Path) -> None:
    for name, value in data.items():
        entry = texts.setdefault(str(name), ToolText())
        if isinstance(value, str):
            entry.description = value.strip()
        elif isinstance(value, dict):
            if "description" in value:
                entry.description = str(value["description"]).strip()
            for param, text in (value.get("params") or {}).items():
                entry.params[str(param)] = str(text).strip()
        else:
            raise ValueError(f"{source}: entry {name!r} must be a string or a mapping")


def load_texts(variant: str | Path | None = None, worn: dict[str, Any] | None = None) -> dict[str, ToolText]:
    """Default descriptions, then a worn surface's (``worn``), then ``variant`` (or
    ``LOCALNEON_DESCRIPTIONS``) on top: a variant tunes the words production shows."""
    texts: dict[str, ToolText] = {}
    _merge(texts, _read(DEFAULT_FILE), DEFAULT_FILE)
    if worn:
        _merge(texts, worn, Path("<surface>"))
    chosen = variant or settings.descriptions_file()
    if chosen:
        path = Path(chosen)
        _merge(texts, _read(path), path)
    return texts
