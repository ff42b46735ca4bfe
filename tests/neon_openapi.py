"""The part of Neon's OpenAPI document the REST conformance tests need, kept in the repository.

Why an excerpt: the whole document (500 KB) lives outside the repository, so tests that needed it
skipped in a plain clone and in CI. The excerpt holds the operations the harness and `localneon`
use, with every schema they reference, and says which version of the document it came from and
when. A missing excerpt fails the tests that need it; it never skips them.

Refresh it from a newer copy: `python -m tests.neon_openapi PATH/TO/neon-api-v2.openapi.json YYYY-MM`.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

EXCERPT = Path(__file__).resolve().parent / "data" / "neon-api-v2.openapi.excerpt.json"

# (path, method) of every call the harness or Neon's own servers make and `localneon` serves.
OPERATIONS = (
    ("/projects", "get"),
    ("/projects", "post"),
    ("/projects/{project_id}", "get"),
    ("/projects/{project_id}", "delete"),
    ("/projects/{project_id}/branches", "get"),
    ("/projects/{project_id}/branches", "post"),
    ("/projects/{project_id}/branches/{branch_id}", "get"),
    ("/projects/{project_id}/branches/{branch_id}", "delete"),
    ("/projects/{project_id}/branches/{branch_id}/restore", "post"),
    ("/projects/{project_id}/branches/{branch_id}/set_as_default", "post"),
    ("/projects/{project_id}/branches/{branch_id}/schema", "get"),
    ("/projects/{project_id}/branches/{branch_id}/compare_schema", "get"),
    ("/projects/{project_id}/branches/{branch_id}/databases", "get"),
    ("/projects/{project_id}/branches/{branch_id}/databases", "post"),
    ("/projects/{project_id}/branches/{branch_id}/databases/{database_name}", "delete"),
    ("/projects/{project_id}/branches/{branch_id}/roles", "get"),
    ("/projects/{project_id}/branches/{branch_id}/endpoints", "get"),
    ("/projects/{project_id}/endpoints", "get"),
    ("/projects/{project_id}/connection_uri", "get"),
    ("/projects/{project_id}/operations", "get"),
    ("/projects/{project_id}/operations/{operation_id}", "get"),
    ("/users/me/organizations", "get"),
    # What Neon's own MCP servers call through @neondatabase/api-client, beyond the harness's calls.
    ("/auth", "get"),
    ("/users/me", "get"),
    ("/organizations/{org_id}", "get"),
    ("/organizations/{org_id}/members", "get"),
    ("/projects/shared", "get"),
    ("/projects/{project_id}/branches/{branch_id}/databases/{database_name}", "get"),
)


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node)) if node else set()
    return set()


def build_excerpt(document: dict[str, Any], source: str, document_date: str) -> dict[str, Any]:
    """The operations in OPERATIONS with every component they reach (plus GeneralError)."""
    paths: dict[str, Any] = {}
    for path, method in OPERATIONS:
        operation = document["paths"][path][method]
        paths.setdefault(path, {})[method] = operation
        if "parameters" in document["paths"][path]:
            paths[path]["parameters"] = document["paths"][path]["parameters"]
    components: dict[str, dict[str, Any]] = {}
    pending = _refs(paths) | {"#/components/schemas/GeneralError"}
    done: set[str] = set()
    while pending:
        ref = pending.pop()
        done.add(ref)
        _, _, section, name = ref.split("/", 3)
        value = document["components"][section][name]
        components.setdefault(section, {})[name] = value
        pending |= _refs(value) - done
    return {
        "openapi": document["openapi"],
        "info": document["info"],
        "x-excerpt": {
            "source": source,
            "version": document["info"].get("version"),
            "document_date": document_date,
            "taken": datetime.now(UTC).strftime("%Y-%m-%d"),
            "operations": [f"{method.upper()} {path}" for path, method in OPERATIONS],
        },
        "paths": paths,
        "components": {section: dict(sorted(items.items())) for section, items in sorted(components.items())},
    }


@cache
def spec() -> dict[str, Any]:
    """The excerpt; a missing or unreadable file is an error (the conformance tests must run)."""
    if not EXCERPT.is_file():
        raise FileNotFoundError(
            f"{EXCERPT} is missing: restore it from git or rebuild it (python -m tests.neon_openapi)"
        )
    document: dict[str, Any] = json.loads(EXCERPT.read_text(encoding="utf-8"))
    return document


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(
            "usage: python -m tests.neon_openapi PATH/TO/neon-api-v2.openapi.json YYYY-MM (the copy's date)",
            file=sys.stderr,
        )
        return 2
    source = Path(argv[0])
    excerpt = build_excerpt(json.loads(source.read_text(encoding="utf-8")), source.name, argv[1])
    EXCERPT.write_text(json.dumps(excerpt, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(
        f"wrote {EXCERPT} ({len(excerpt['paths'])} paths, {sum(map(len, excerpt['components'].values()))} components)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
