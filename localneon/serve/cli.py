"""Command line: ``python -m localneon --transport stdio|http [...]`` (also the ``localneon`` script).

In stdio mode nothing but MCP protocol reaches stdout. In http mode, once the socket is bound,
one line goes to stderr (``localneon: serving http://HOST:PORT (MCP at /mcp, API at /api/v2)``)
and, with ``--ready-file``, a JSON file with the URLs and pid is written atomically. Before it, the
first start on a data directory says ``localneon: first start: creating the embedded PostgreSQL
cluster ...``, which the harness shows on the run's console while it waits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from localneon import settings

if TYPE_CHECKING:
    from localneon.engine.branching import Neon
    from localneon.mcp.server import Settings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="localneon", description="Local Neon-compatible MCP server and API.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8787, help="0 picks a free port")
    parser.add_argument("--token", default=None, help="bearer token required on /mcp and /api/v2 (or LOCALNEON_TOKEN)")
    parser.add_argument("--descriptions", default=None, help="YAML file overriding tool descriptions")
    parser.add_argument(
        "--surface",
        default=None,
        help="a snapshot file (python -m localneon.snapshot) whose descriptions and annotations the tools wear "
        "(or LOCALNEON_SURFACE)",
    )
    parser.add_argument("--flat-params", action="store_true", help="flat tool arguments instead of {'params': {...}}")
    parser.add_argument("--ready-file", default=None, help="http mode: write a JSON file with the URLs once listening")
    grant = parser.add_argument_group(
        "default grant", "what a session gets when its URL sets no grant (stdio: always); http URLs may override"
    )
    grant.add_argument("--project-id", default=None, help="scope sessions to one project (like ?projectId=)")
    grant.add_argument("--category", action="append", default=[], help="keep only these tool categories (repeatable)")
    grant.add_argument("--readonly", action="store_true", help="read-only mode (like ?readonly=true)")
    parser.add_argument(
        "--watch-parent",
        action="store_true",
        help="http mode: shut down when the process that started this one dies (a run killed with -9)",
    )
    parser.add_argument("--log-level", default="WARNING")
    return parser.parse_args(argv)


def settings_from(args: argparse.Namespace) -> Settings:
    """Server settings from the command line (the default grant included)."""
    from localneon.mcp.grants import Grant, parse_categories
    from localneon.mcp.server import Settings

    grant = Grant(
        project_id=args.project_id or None, categories=parse_categories(args.category), read_only=args.readonly
    )
    surface = args.surface or settings.surface_file()
    return Settings(flat_params=args.flat_params, descriptions=args.descriptions, grant=grant, surface=surface)


def write_ready_file(path: str, url: str) -> None:
    """Write the ready file atomically (temp file + rename), so readers never see half of it."""
    target = Path(path)
    data = {"url": url, "mcp_url": f"{url}/mcp", "api_url": f"{url}/api/v2", "pid": os.getpid()}
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, target)


def open_collected() -> Neon:
    """The cluster, opened (started if need be), with what killed processes left in it collected: so the
    restarted server, or the one the janitor starts, cleans up after them. (The HTTP app collects
    again at shutdown, in its lifespan; uvicorn re-raises SIGTERM once it has served, so code after
    `serve()` never runs.)"""
    from localneon.engine.branching import Neon
    from localneon.engine.gc import collect_and_report

    neon = Neon.open()
    collect_and_report(neon)
    return neon


async def serve_stdio(args: argparse.Namespace) -> None:
    from mcp.server.stdio import stdio_server

    from localneon.mcp.server import build_server, sweep_expired_branches

    # Inside stdio_server fd 1 points at stderr, so nothing the cluster start-up prints can reach the wire.
    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
        neon = await anyio.to_thread.run_sync(open_collected)
        server = build_server(neon, settings_from(args))
        tg.start_soon(sweep_expired_branches, neon)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()
    from localneon.engine.gc import collect_and_report

    await anyio.to_thread.run_sync(collect_and_report, neon)  # stdio has no lifespan: collect on the way out


# Longer than any client's idle expiry (httpx 5 s, Node's fetch 4 s), so that the client always closes
# an idle connection first. With uvicorn's default (5 s, the same as httpx's), a busy server can close a
# connection just as a client reuses it, and that request dies with no answer (a branch left behind).
KEEP_ALIVE_S = 75


async def serve_http(args: argparse.Namespace) -> None:
    import uvicorn

    from localneon.serve.app import build_app

    parent = os.getppid()
    neon = await anyio.to_thread.run_sync(open_collected)
    token = args.token or settings.token()
    app = build_app(neon, settings_from(args), token=token, host=args.host)
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", lifespan="on", timeout_keep_alive=KEEP_ALIVE_S
    )
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            if server.should_exit:
                return
            await anyio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{args.host}:{port}"
        print(f"localneon: serving {url} (MCP at /mcp, API at /api/v2)", file=sys.stderr, flush=True)
        if args.ready_file:
            write_ready_file(args.ready_file, url)
        if args.watch_parent:
            tg.start_soon(stop_when_orphaned, server, parent)


async def stop_when_orphaned(server: Any, parent: int, every: float = 0.5) -> None:
    """Shut the server down once its parent is gone (it runs in a session of its own, so a killed
    run's signal never reaches it): the lifespan collects what the run left, the lease is released."""
    while not server.should_exit:
        if os.getppid() != parent:
            print(f"localneon: the process that started this server ({parent}) is gone; stopping", file=sys.stderr)
            server.should_exit = True
            return
        await anyio.sleep(every)


def exit_on_sigterm() -> None:
    """SIGTERM ends the process through SystemExit, so atexit runs: the cluster lease is released and
    the cluster stops with its last user (uvicorn re-raises the signal once it has shut down)."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    surface = args.surface or settings.surface_file()
    if surface:
        from localneon.mcp.surface import Surface, SurfaceError

        try:
            Surface.load(surface)
        except SurfaceError as exc:
            sys.exit(f"localneon: --surface: {exc}")
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="localneon %(levelname)s %(message)s")
    exit_on_sigterm()
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve_stdio if args.transport == "stdio" else serve_http, args)
