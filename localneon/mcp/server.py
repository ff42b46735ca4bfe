"""The MCP server: tool listing and dispatch on the low-level ``mcp.server.Server``.

The low-level server (rather than ``MCPServer`` decorators) lets the input schemas and the
descriptions come from our specs and the YAML file instead of Python signatures, and lets one
flag switch every tool between Neon's wrapped arguments (``{"params": {...}}``) and flat ones.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qs

import anyio
import anyio.to_thread
import mcp_types as types
import psycopg
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import best_match
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from localneon.engine.branching import Neon
from localneon.engine.errors import LocalNeonError
from localneon.mcp import grants
from localneon.mcp.descriptions import ToolText, load_texts
from localneon.mcp.grants import Grant
from localneon.mcp.surface import Surface
from localneon.mcp.tools import Handler, ToolSpec, all_tools

log = logging.getLogger("localneon")
PROJECT_PARAM = "projectId"
SERVER_NAME = "localneon"
INSTRUCTIONS = (
    "Local Neon-compatible Postgres server. Projects contain branches; each branch is an independent "
    "copy of its parent's databases. Try schema changes with prepare_database_migration and apply "
    "them with complete_database_migration only after the user approves."
)


@dataclass(frozen=True)
class Settings:
    """How the tools are exposed: wrapped or flat arguments, which descriptions, the default grant."""

    flat_params: bool = False
    descriptions: str | None = None
    grant: Grant = field(default_factory=Grant)
    surface: str | None = None  # a snapshot file whose words and annotations the tools wear


def inner_schema(spec: ToolSpec, text: ToolText, *, scoped: bool = False) -> dict[str, Any]:
    """The arguments' schema; project-scoped, ``projectId`` is left out (the server fills it in)."""
    params = [p for p in spec.params if not (scoped and p.name == PROJECT_PARAM)]
    properties: dict[str, Any] = {}
    for param in params:
        schema = dict(param.schema)
        if param.name in text.params:
            schema["description"] = text.params[param.name]
        properties[param.name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    required = [p.name for p in params if p.required]
    if required:
        result["required"] = required
    return result


def input_schema(spec: ToolSpec, text: ToolText, flat: bool, *, scoped: bool = False) -> dict[str, Any]:
    inner = inner_schema(spec, text, scoped=scoped)
    if flat:
        return inner
    return {"type": "object", "properties": {"params": inner}, "required": ["params"]}


def tool_annotations(spec: ToolSpec, worn: dict[str, Any] | None = None) -> types.ToolAnnotations:
    """The MCP annotations Neon lists for a tool: every hint explicit; a worn surface's win."""
    own = types.ToolAnnotations(
        title=spec.title or spec.name.replace("_", " "),
        read_only_hint=spec.read_only,
        destructive_hint=spec.destructive and not spec.read_only,
        idempotent_hint=spec.idempotent,
        open_world_hint=spec.open_world,
    )
    if not worn:
        return own
    return types.ToolAnnotations.model_validate({**own.model_dump(by_alias=True, exclude_none=True), **worn})


@dataclass
class GrantView:
    """The tools one grant sees: which, with what schemas and descriptions, and how they run."""

    grant: Grant
    specs: dict[str, ToolSpec]
    tools: list[types.Tool]
    validators: dict[str, Draft202012Validator]

    def handler(self, spec: ToolSpec) -> Handler:
        if self.grant.read_only and spec.read_only_handler is not None:
            return spec.read_only_handler
        return spec.handler


class ToolRegistry:
    """Specs and texts for one server configuration, and the view each grant gets of them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        surface = Surface.load(settings.surface) if settings.surface else None
        texts = load_texts(settings.descriptions, surface.texts() if surface else None)
        self.specs = {spec.name: spec for spec in all_tools()}
        worn = surface.tools if surface else {}
        self.annotations = {
            name: tool_annotations(spec, worn[name].annotations if name in worn else None)
            for name, spec in self.specs.items()
        }
        unknown = sorted(set(texts) - set(self.specs))
        if unknown:
            log.warning("descriptions (or a worn surface) name tools not served here: %s", ", ".join(unknown))
        self.texts = {name: texts.get(name, ToolText()) for name in self.specs}
        self.schemas = {
            name: input_schema(spec, self.texts[name], settings.flat_params) for name, spec in self.specs.items()
        }
        self._views: dict[Grant, GrantView] = {}

    def visible(self, grant: Grant) -> dict[str, ToolSpec]:
        """Neon's filters in Neon's order: categories, then project scoping, then read-only mode."""
        kept = {n: s for n, s in self.specs.items() if grants.category_allows(grant, n, s.category)}
        if grant.scoped:
            kept = {n: s for n, s in kept.items() if n not in grants.HIDDEN_WHEN_SCOPED}
        if grant.read_only:
            kept = {n: s for n, s in kept.items() if s.read_only_safe}
        return kept

    def view(self, grant: Grant | None = None) -> GrantView:
        grant = grant or self.settings.grant
        cached = self._views.get(grant)
        if cached is not None:
            return cached
        specs = self.visible(grant)
        destructive_listed = any(
            self.annotations[n].destructive_hint for n in self.visible(replace(grant, read_only=False))
        )
        paragraphs = grants.notices(grant, destructive_listed)
        tools: list[types.Tool] = []
        validators: dict[str, Draft202012Validator] = {}
        for name, spec in specs.items():
            schema = input_schema(spec, self.texts[name], self.settings.flat_params, scoped=grant.scoped)
            validators[name] = Draft202012Validator(schema)
            tools.append(
                types.Tool(
                    name=name,
                    description=grants.with_notices(self.texts[name].description, paragraphs),
                    input_schema=schema,
                    annotations=self.annotations[name],
                )
            )
        view = GrantView(grant, specs, tools, validators)
        if len(self._views) >= 256:  # one grant per trial project: keep the newest
            self._views.pop(next(iter(self._views)))
        self._views[grant] = view
        return view

    def tools(self, grant: Grant | None = None) -> list[types.Tool]:
        return self.view(grant).tools

    def arguments(self, name: str, raw: dict[str, Any] | None, grant: Grant | None = None) -> dict[str, Any]:
        """Validate against the listed schema, unwrap ``params`` and, project-scoped, pin ``projectId``.

        Raises LocalNeonError. Like Neon, a scoped session's own ``projectId`` wins over any the
        caller sends, so a call cannot reach another project.
        """
        view = self.view(grant)
        raw = raw or {}
        errors = sorted(view.validators[name].iter_errors(raw), key=lambda e: list(e.absolute_path))
        if errors:
            details = "; ".join(_problem(e) for e in errors[:5])
            shape = "flat arguments" if self.settings.flat_params else 'arguments wrapped as {"params": {...}}'
            raise LocalNeonError(f"invalid arguments for {name} (this server expects {shape}): {details}")
        args = dict(raw) if self.settings.flat_params else dict(raw["params"])
        if view.grant.project_id and any(p.name == PROJECT_PARAM for p in view.specs[name].params):
            args[PROJECT_PARAM] = view.grant.project_id
        return args


_SECRET_PARTS = ("password", "secret")


def _problem(error: ValidationError) -> str:
    """One schema violation as "path: message", never echoing a secret argument's value.

    For a value matching none of several forms (``anyOf``) jsonschema's message repeats the whole
    value (an SMTP password included), so the closest form's own complaint is given instead."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        return _problem(best_match(error.context))
    path = "/".join(str(p) for p in error.absolute_path) or "(arguments)"
    if any(part in path.lower() for part in _SECRET_PARTS) and error.validator not in ("required",):
        return f"{path}: the value given does not satisfy {error.validator} {error.validator_value!r}"
    return f"{path}: {error.message}"


def request_grant(ctx: ServerRequestContext[Any], default: Grant) -> Grant:
    """The grant of this request: from its HTTP URL (Streamable HTTP), else the server's default (stdio)."""
    request = ctx.request
    url = getattr(request, "url", None)
    if url is None:
        return default
    query = parse_qs(str(getattr(url, "query", "") or ""), keep_blank_values=False)
    headers = {k.lower(): v for k, v in dict(getattr(request, "headers", {}) or {}).items()}
    return grants.grant_from_request(query, headers, default)


def api_status_line(exc: LocalNeonError) -> str:
    """The line Neon's hosted server (HEAD) adds under an API refusal's message: ``[HTTP 404] ...``."""
    return f"[HTTP {exc.status}] {exc.message}"


def _text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def build_server(neon: Neon, settings: Settings) -> Server[Any]:
    """A low-level MCP server exposing every tool against ``neon``."""
    registry = ToolRegistry(settings)

    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=registry.tools(request_grant(ctx, settings.grant)))

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        view = registry.view(request_grant(ctx, settings.grant))
        spec = view.specs.get(params.name)
        if spec is None:
            return _text_result(f"unknown tool {params.name!r}", error=True)
        result = await _call(view, spec, params.arguments)
        result.content.extend(types.TextContent(text=line) for line in grants.warnings(view.grant))
        return result

    async def _call(view: GrantView, spec: ToolSpec, raw: dict[str, Any] | None) -> types.CallToolResult:
        name = spec.name
        try:
            args = registry.arguments(name, raw, view.grant)
            text = await anyio.to_thread.run_sync(view.handler(spec), neon, args)
            return _text_result(text)
        except LocalNeonError as exc:
            if exc.api_error:  # Neon's API refused: its tools pass the API's message on, then its status
                return types.CallToolResult(
                    content=[types.TextContent(text=exc.message), types.TextContent(text=api_status_line(exc))],
                    is_error=True,
                )
            return _text_result(f"{name}: {exc.message}", error=True)
        except psycopg.Error as exc:
            return _text_result(f"{name}: PostgreSQL error: {str(exc).strip()}", error=True)
        except Exception as exc:
            log.exception("tool %s failed", name)
            return _text_result(f"{name}: internal error: {type(exc).__name__}: {exc}", error=True)

    def tool_schema(name: str) -> dict[str, Any] | None:
        return registry.schemas.get(name)

    return Server(
        SERVER_NAME,
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=tool_schema,
    )


async def sweep_expired_branches(neon: Neon, interval: float = 30.0) -> None:
    """Background job: delete branches past their ``expires_at``, like Neon's cleanup does."""
    while True:
        try:
            deleted = await anyio.to_thread.run_sync(neon.delete_expired_branches)
            if deleted:
                log.info("deleted expired branches: %s", ", ".join(deleted))
        except Exception:
            log.exception("expired-branch sweep failed")
        await anyio.sleep(interval)
