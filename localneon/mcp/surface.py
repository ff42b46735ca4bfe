"""Tool surfaces: a server's tools as a file (names, descriptions, schemas, annotations), worn and compared.

A snapshot (``python -m localneon.snapshot``) is JSON: ``{"snapshot": {...where and when...},
"tools": [{"name", "title", "description", "input_schema", "annotations"}, ...]}``. Wearing it
(``--surface FILE``) gives every tool both servers have the snapshot's words (description,
parameter descriptions) and annotations; schemas and behaviour stay localneon's, and the drift
report says how far apart the two are: a missing tool, a renamed, missing or retyped parameter,
a changed required list, changed annotations.
"""

from __future__ import annotations

import copy
import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from localneon.mcp.grants import Grant, grant_from_request, strip_notices

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


class SurfaceError(ValueError):
    """A surface file that cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True)
class SurfaceTool:
    name: str
    description: str
    schema: dict[str, Any]  # the arguments' object schema, unwrapped from {"params": ...}
    annotations: dict[str, Any]


def unwrap(schema: dict[str, Any]) -> dict[str, Any]:
    """The arguments' schema: Neon's ``{"params": {...}}`` wrapper removed, ``$ref`` to it resolved."""
    properties = schema.get("properties") or {}
    if set(properties) != {"params"}:
        return schema
    inner = properties["params"]
    ref = inner.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = schema
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        inner = {**target, **{k: v for k, v in inner.items() if k != "$ref"}}
    return inner if inner.get("type") == "object" or "properties" in inner else schema


def tool_entry(name: str, description: str | None, input_schema: dict[str, Any], annotations: Any) -> dict[str, Any]:
    """One tool as a snapshot stores it (annotations as MCP's camelCase JSON)."""
    if annotations is not None and hasattr(annotations, "model_dump"):
        annotations = annotations.model_dump(by_alias=True, exclude_none=True)
    return {
        "name": name,
        "description": description or "",
        "input_schema": copy.deepcopy(input_schema),
        "annotations": dict(annotations or {}),
    }


@dataclass(frozen=True)
class Surface:
    source: dict[str, Any]
    tools: dict[str, SurfaceTool]

    @classmethod
    def load(cls, path: str | Path) -> Surface:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise SurfaceError(f"{path}: not a readable JSON surface file: {exc}") from exc
        return cls.from_document(data, str(path))

    @classmethod
    def from_document(cls, data: Any, origin: str) -> Surface:
        """A surface from a parsed snapshot document; ``origin`` names it in errors."""
        path = origin
        entries = data.get("tools") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise SurfaceError(f"{path}: expected an object with a 'tools' list")
        tools: dict[str, SurfaceTool] = {}
        for index, entry in enumerate(entries):
            schema = entry.get("input_schema") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(schema, dict):
                raise SurfaceError(f"{path}: tools[{index}] needs a string 'name' and an object 'input_schema'")
            tools[entry["name"]] = SurfaceTool(
                entry["name"],
                strip_notices(str(entry.get("description") or "")),
                unwrap(schema),
                dict(entry.get("annotations") or {}),
            )
        return cls(dict(data.get("snapshot") or {}), tools)

    def grant(self) -> Grant:
        """The grant the snapshot was taken under (from its URL), so drift compares like with like."""
        query = parse_qs(urlsplit(str(self.source.get("server", ""))).query)
        return grant_from_request(query, {})

    def texts(self) -> dict[str, Any]:
        """The snapshot's words in the shape of a description-variant file (for ``texts.load_texts``)."""
        result: dict[str, Any] = {}
        for name, tool in self.tools.items():
            params = {
                p: str(s["description"])
                for p, s in (tool.schema.get("properties") or {}).items()
                if isinstance(s, dict) and s.get("description")
            }
            result[name] = {"description": tool.description, "params": params}
        return result


def _type_of(schema: Any) -> str:
    """A short type signature: ``string``, ``array<string>``, ``integer|null``, ``enum``..."""
    if not isinstance(schema, dict):
        return "any"
    if "anyOf" in schema:
        return "|".join(sorted(_type_of(s) for s in schema["anyOf"]))
    kind = schema.get("type", "enum" if "enum" in schema else "any")
    if isinstance(kind, list):
        kind = "|".join(sorted(str(k) for k in kind))
    if kind == "array":
        return f"array<{_type_of(schema.get('items'))}>"
    return str(kind)


def _renames(
    only_here: list[str], only_there: list[str], here: dict[str, Any], there: dict[str, Any]
) -> dict[str, str]:
    """Pair parameters that exist on one side only, of one type: snapshot name -> our name. The most
    alike names pair first (then in order), so a renamed `databaseName` is paired with the snapshot's
    `database`, not with a `branchId` listed before it that the snapshot lacks altogether."""
    candidates = sorted(
        (
            -difflib.SequenceMatcher(None, ours.lower(), theirs.lower(), autojunk=False).ratio(),
            j,
            i,
            theirs,
            ours,
        )
        for j, theirs in enumerate(only_there)
        for i, ours in enumerate(only_here)
        if _type_of(here[ours]) == _type_of(there[theirs])
    )
    pairs: dict[str, str] = {}
    for _, _, _, theirs, ours in candidates:
        if theirs not in pairs and ours not in pairs.values():
            pairs[theirs] = ours
    return {theirs: pairs[theirs] for theirs in only_there if theirs in pairs}


def tool_drift(name: str, ours: SurfaceTool, theirs: SurfaceTool) -> list[str]:
    here = ours.schema.get("properties") or {}
    there = theirs.schema.get("properties") or {}
    only_here = [p for p in here if p not in there]
    only_there = [p for p in there if p not in here]
    renamed = _renames(only_here, only_there, here, there)
    lines = [f"{name}: parameter {ours_} is called {theirs_} in the snapshot" for theirs_, ours_ in renamed.items()]
    lines += [f"{name}: parameter {p} is in the snapshot but not here" for p in only_there if p not in renamed]
    lines += [f"{name}: parameter {p} is here but not in the snapshot" for p in only_here if p not in renamed.values()]
    for p in here:
        if p in there and _type_of(here[p]) != _type_of(there[p]):
            lines.append(f"{name}: parameter {p} is {_type_of(here[p])} here, {_type_of(there[p])} in the snapshot")
    required_here = sorted(ours.schema.get("required") or [])
    required_there = sorted(renamed.get(p, p) for p in theirs.schema.get("required") or [])
    if required_here != required_there:
        lines.append(f"{name}: required {required_here} here, {required_there} in the snapshot")
    for key in ("title", *HINTS):
        if key in theirs.annotations and ours.annotations.get(key) != theirs.annotations[key]:
            lines.append(
                f"{name}: {key} {ours.annotations.get(key)!r} here, {theirs.annotations[key]!r} in the snapshot"
            )
    return lines


def drift(ours: dict[str, SurfaceTool], snapshot: dict[str, SurfaceTool]) -> list[str]:
    """Every difference between our tools and a snapshot's, one line each; [] when they agree."""
    lines = [f"{name}: tool in the snapshot is missing here" for name in snapshot if name not in ours]
    lines += [f"{name}: tool here is not in the snapshot" for name in ours if name not in snapshot]
    for name, tool in snapshot.items():
        if name in ours:
            lines += tool_drift(name, ours[name], tool)
    return lines
