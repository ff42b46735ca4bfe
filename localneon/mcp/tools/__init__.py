"""The MCP tool surface: one ``ToolSpec`` per tool, with Neon's names and camelCase parameters.

Schemas (types, required fields, defaults) live next to each handler; the words (tool and parameter
descriptions) live in ``localneon/descriptions/default.yaml`` so a variant file can replace them
without touching code. Handlers are synchronous (psycopg) and run in worker threads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from localneon.engine.branching import Neon


@dataclass(frozen=True)
class Param:
    """One argument: its JSON schema fragment and whether it is required."""

    name: str
    schema: dict[str, Any]
    required: bool = False


Handler = Callable[[Neon, dict[str, Any]], str]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: schema, handler, and what Neon says about it (annotations, category, read-only mode).

    ``category`` is Neon's scope category (None: listed whatever ``?category=`` says);
    ``read_only_safe`` says whether read-only mode keeps the tool, and ``read_only_handler``
    replaces ``handler`` in that mode (SQL in a read-only transaction).
    """

    name: str
    params: tuple[Param, ...]
    handler: Handler
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    title: str = ""
    category: str | None = None
    read_only_safe: bool = False
    open_world: bool = False
    read_only_handler: Handler | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def string(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def integer(**extra: Any) -> dict[str, Any]:
    return {"type": "integer", **extra}


def boolean(**extra: Any) -> dict[str, Any]:
    return {"type": "boolean", **extra}


def string_list(**extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, **extra}


def all_tools() -> list[ToolSpec]:
    """Every tool, in the order they are listed to clients."""
    from localneon.mcp.tools import (
        branches,
        discovery,
        migrations,
        neon_auth,
        observability,
        projects,
        querying,
        tuning,
    )

    return [
        *projects.TOOLS,
        *querying.TOOLS,
        *branches.TOOLS,
        *migrations.TOOLS,
        *neon_auth.TOOLS,
        *tuning.TOOLS,
        *discovery.TOOLS,
        *observability.TOOLS,
    ]
