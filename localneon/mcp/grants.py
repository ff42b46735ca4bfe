"""Grants: what one MCP session may see and touch, set by its URL as on Neon's server.

Neon's server reads three query parameters on its MCP URL (see ``localneon/reference/``):
``projectId`` pins one project (the project tools and the discovery tools disappear, ``projectId``
leaves every schema and the server fills it in, so a call cannot name another project);
``category`` keeps only some tool groups (repeated or comma-separated; unknown names are
dropped; none valid leaves only the tools without a category); ``readonly=true`` (or the legacy
``x-read-only: true`` header) keeps the read-safe tools and runs SQL in read-only transactions.
Every listed description then carries notices saying which of these is in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CATEGORIES = ("projects", "branches", "schema", "querying", "neon_auth", "data_api", "observability", "docs")
PROJECT_TOOLS = frozenset(
    {"list_projects", "list_organizations", "list_shared_projects", "create_project", "delete_project"}
)
HIDDEN_WHEN_SCOPED = PROJECT_TOOLS | {"search", "fetch"}
ALWAYS_LISTED = frozenset({"search", "fetch"})
NOTICE_OPEN = "<notice>"
NOTICE_CLOSE = "</notice>"


@dataclass(frozen=True)
class Grant:
    """One session's grant; the default grant (all None/False) is the unscoped full-access server."""

    project_id: str | None = None
    categories: tuple[str, ...] | None = None  # None: every category; (): none valid was given
    read_only: bool = False

    @property
    def scoped(self) -> bool:
        return self.project_id is not None


def _truthy(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip().lower() == "true"


def parse_categories(values: Iterable[str]) -> tuple[str, ...] | None:
    """``category`` values, repeated or comma-separated: None if none was given, else the valid ones."""
    given = [part.strip() for value in values for part in value.split(",") if part.strip()]
    if not given:
        return None
    return tuple(dict.fromkeys(name for name in given if name in CATEGORIES))


def grant_from_request(
    query: Mapping[str, list[str]], headers: Mapping[str, str], default: Grant | None = None
) -> Grant:
    """The grant a request's URL (and ``x-read-only`` header) asks for.

    Parameters the URL leaves out fall back to ``default`` (the server's command-line grant);
    the query parameter wins over the header, as on Neon.
    """
    base = default or Grant()
    project = (query.get("projectId") or [""])[0].strip() or base.project_id
    categories = parse_categories(query.get("category", []))
    read_only = _truthy(query["readonly"][0]) if query.get("readonly") else None
    if read_only is None:
        read_only = _truthy(headers.get("x-read-only"))
    return Grant(
        project_id=project,
        categories=categories if categories is not None else base.categories,
        read_only=base.read_only if read_only is None else read_only,
    )


def category_allows(grant: Grant, name: str, category: str | None) -> bool:
    if grant.categories is None or name in ALWAYS_LISTED or category is None:
        return True
    return category in grant.categories


def notices(grant: Grant, destructive_listed: bool) -> list[str]:
    """The notice paragraphs for a grant: read-only, else write mode when a destructive tool is listed;
    and project scoping. Same conditions and facts as Neon's notices, in our own words."""
    found: list[str] = []
    if grant.read_only:
        found.append(
            "Notice: this server runs in read-only mode. Every tool that could change a Neon resource "
            "has been removed, and the SQL tools run inside read-only transactions. This is deliberate: "
            "do not look for a way around it. If the user asks for a change, explain that the server is "
            "read-only; they can lift it by removing the readonly query parameter from the MCP server URL, "
            "or, with OAuth, by signing out and back in with full access."
        )
    elif destructive_listed:
        found.append(
            "Notice: write mode is on and destructive tools are listed. Never call a tool annotated "
            "`destructiveHint: true` on your own initiative: ask the user first, every time."
        )
    if grant.project_id:
        found.append(
            f"Notice: this server is scoped to a single project ({grant.project_id}). The project "
            "management tools have been removed, and every remaining tool acts on this project only. This "
            "is deliberate. If the user asks about or wants to change another project, explain the project "
            "scoping; they can remove it by taking the projectId query parameter out of the MCP server URL "
            "(with OAuth, also sign out and back in after removing it)."
        )
    return found


def with_notices(description: str, paragraphs: list[str]) -> str:
    """A description with the notice block appended after a blank line (unchanged without notices)."""
    if not paragraphs:
        return description
    return f"{description}\n\n{NOTICE_OPEN}\n" + "\n\n".join(paragraphs) + f"\n{NOTICE_CLOSE}"


def strip_notices(description: str) -> str:
    """A description without a trailing notice block (one worn from a snapshot taken under a grant)."""
    head, sep, tail = description.rpartition(f"\n\n{NOTICE_OPEN}\n")
    if sep and tail.rstrip().endswith(NOTICE_CLOSE):
        return head
    return description


def warnings(grant: Grant) -> list[str]:
    """Lines appended to every tool result when the grant is contradictory (no valid category)."""
    if grant.categories is not None and not grant.categories:
        left = "No tools are available." if grant.scoped else 'Only the "search" and "fetch" tools are available.'
        return [
            "Warning: none of the category query parameters named a valid category. "
            f"{left} Add categories, for example ?category=querying&category=schema, to get more tools."
        ]
    return []
