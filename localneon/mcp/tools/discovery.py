"""Search, fetch and the local documentation pages shipped in ``localneon/docs``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localneon.engine.branching import Neon
from localneon.engine.errors import InvalidRequest, NotFound
from localneon.mcp.tools import Param, ToolSpec, string
from localneon.mcp.tools.common import branch_json, require_text, to_json

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs"


@dataclass(frozen=True)
class Doc:
    slug: str
    title: str
    text: str


def load_docs() -> list[Doc]:
    """Every ``docs/*.md``; the slug is the file name, the title its first heading."""
    docs = []
    for path in sorted(DOCS_DIR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
        docs.append(Doc(path.stem, title, text))
    return docs


def list_docs_resources(neon: Neon, args: dict[str, Any]) -> str:
    return to_json({"docs": [{"slug": d.slug, "title": d.title} for d in load_docs()]})


def get_doc_resource(neon: Neon, args: dict[str, Any]) -> str:
    slug = require_text(args, "slug").strip().removesuffix(".md").removeprefix("doc:")
    for doc in load_docs():
        if doc.slug == slug:
            return doc.text
    known = ", ".join(d.slug for d in load_docs())
    raise NotFound(f"no doc page {slug!r}; available: {known}")


def search(neon: Neon, args: dict[str, Any]) -> str:
    text = require_text(args, "query").strip()
    if len(text) < 2:
        raise InvalidRequest("query must have at least 2 characters")
    results: list[dict[str, Any]] = []
    for project in neon.catalog.list_projects(text, None, 20):
        results.append({"id": project.id, "type": "project", "title": project.name})
    for branch in neon.catalog.search_branches(text):
        results.append({"id": branch.id, "type": "branch", "title": f"{branch.name} (project {branch.project_id})"})
    needle = text.lower()
    for doc in load_docs():
        if needle in doc.title.lower() or needle in doc.text.lower() or needle in doc.slug:
            results.append({"id": f"doc:{doc.slug}", "type": "doc", "title": doc.title})
    return to_json({"results": results, "hint": "pass an id to fetch for details"})


def fetch(neon: Neon, args: dict[str, Any]) -> str:
    ref = require_text(args, "id").strip()
    if ref.startswith("doc:"):
        return get_doc_resource(neon, {"slug": ref})
    if ref.startswith("br-"):
        branch = neon.catalog.get_branch_any_project(ref)
        if branch is None:
            raise NotFound(f"no branch with id {ref!r}")
        return to_json({"type": "branch", **branch_json(neon, branch)})
    project = neon.catalog.get_project(ref)
    if project is None:
        raise NotFound(f"nothing found for id {ref!r} (expected a project id, a br-... branch id or doc:<slug>)")
    branches = [branch_json(neon, b) for b in neon.catalog.list_branches(project.id)]
    return to_json({"type": "project", "id": project.id, "name": project.name, "branches": branches})


TOOLS = [
    ToolSpec(
        "search",
        (Param("query", string(), required=True),),
        search,
        read_only=True,
        idempotent=True,
        title="Search",
        category=None,
        read_only_safe=True,
    ),
    ToolSpec(
        "fetch",
        (Param("id", string(), required=True),),
        fetch,
        read_only=True,
        idempotent=True,
        title="Fetch",
        category=None,
        read_only_safe=True,
    ),
    ToolSpec(
        "list_docs_resources",
        (),
        list_docs_resources,
        read_only=True,
        idempotent=True,
        title="List Documentation Resources",
        category="docs",
        read_only_safe=True,
        open_world=True,
    ),
    ToolSpec(
        "get_doc_resource",
        (Param("slug", string(), required=True),),
        get_doc_resource,
        read_only=True,
        idempotent=True,
        title="Get Documentation Resource",
        category="docs",
        read_only_safe=True,
        open_world=True,
    ),
]
