"""How a saved tool surface is named in lines, `run.json` and experiment metadata: a leaf module, so
settings can name the worn surface without importing what takes one (npm, the twin)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.servers.neon.published.pin import SERVER_PACKAGE

FILE_ENV = "LOCALNEON_SURFACE"  # what the twin reads: the snapshot file it wears
OWN_LABEL = "localneon's own wording"


class SurfaceChoiceError(ValueError):
    """A surface that was asked for and cannot be worn; the message names the setting and the fix."""


def label_of(path: Path) -> str:
    """How a snapshot is named: the npm package and version, or the URL it was taken from and when."""
    try:
        header = json.loads(path.read_text(encoding="utf-8"))["snapshot"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SurfaceChoiceError(f"{FILE_ENV}={path}: not a snapshot file ({error})") from None
    info = header.get("server_info") or {}
    where, version = str(header.get("server") or ""), info.get("version")
    if where.startswith(("http://", "https://")):
        return f"{where} ({info.get('name', 'server')} {version or '?'}, taken {header.get('taken_at', '?')})"
    if info.get("name") == "mcp-server-neon" and version:
        return f"{SERVER_PACKAGE}@{version}"
    return f"{path.name} ({info.get('name', 'server')} {version or '?'})"


def worn_label(path: Path) -> str:
    """The label of the surface a local twin wears (`Settings.surface`): the snapshot's, or its file's
    name when the file is not a snapshot (the twin then refuses it at start, saying why)."""
    try:
        return label_of(path)
    except SurfaceChoiceError:
        return path.name
