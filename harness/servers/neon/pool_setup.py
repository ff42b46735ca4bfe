"""Create or check the pool projects: `python -m harness.pool setup [--apply]` (`make pool`).

Why a command: a pool project must be shaped exactly so (the fixture on a root branch named
golden, main branched from it as the default branch, nothing else branched from main), and a case
can only run on a project holding its fixture. By default it only looks and says what it would
do; `--apply` creates what is missing. Either way it prints the `NEON_PROJECT_POOL` line.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pglast
from pglast import ast

from harness.cases import DatasetError, load_cases, scripts_at
from harness.config import ConfigError, Settings
from harness.environment import host, process_env
from harness.servers.neon.api import NeonAPI, NeonAPIError
from harness.servers.neon.backend import api_for, api_url_for
from harness.servers.neon.pool import parse_pool
from harness.servers.neon.sandbox import FixtureScripts, create_golden_project
from harness.servers.neon.state import fingerprint

POOL_PREFIX = "mcp-evals-pool-"  # not the eval- prefix: nothing ever deletes a pool project


# One project per fixture for each shard of the nightly workflow (its matrix has 4): shards on different
# machines never share a project (`braintrust_run.shard.shard_pool`).
DEFAULT_PER_FIXTURE = 4


@dataclass
class PoolPlan:
    """What the pool holds, what is wrong with it, and what setup creates (or would)."""

    good: dict[str, list[str]] = field(default_factory=dict)  # fixture -> checked project ids
    problems: list[str] = field(default_factory=list)
    to_create: list[tuple[str, str]] = field(default_factory=list)  # (fixture, project name)
    created: list[tuple[str, str]] = field(default_factory=list)  # (fixture, project id)

    def pool_line(self) -> str:
        entries = [f"{fixture}:{pid}" for fixture, ids in sorted(self.good.items()) for pid in ids]
        entries += [f"{fixture}:{pid}" for fixture, pid in self.created]
        return "NEON_PROJECT_POOL=" + ",".join(entries)


def fixture_tables(sql: str) -> set[str]:
    """`schema.table` of every table a fixture creates (read with PostgreSQL's parser)."""
    tables: set[str] = set()
    for raw in pglast.parse_sql(sql):
        statement = raw.stmt
        if isinstance(statement, ast.CreateStmt) and statement.relation is not None:
            tables.add(f"{statement.relation.schemaname or 'public'}.{statement.relation.relname}")
    return tables


def read_scripts(fixture: Path) -> list[tuple[str, str]]:
    """A fixture file's or folder's (database, SQL text) pairs."""
    return [(database, path.read_text(encoding="utf-8")) for database, path in scripts_at(fixture)]


async def check_project(api: NeonAPI, project_id: str, scripts: FixtureScripts, golden: str) -> list[str]:
    """What is wrong with a pool project (empty when it is ready)."""
    try:
        branches = await api.list_branches(project_id)
    except Exception as error:
        return [f"{project_id}: cannot list branches: {error}"]
    default = next((b for b in branches if b.get("default")), None)
    gold = next((b for b in branches if b.get("name") == golden), None)
    if gold is None:
        return [f"{project_id}: no branch named '{golden}' (NEON_GOLDEN_BRANCH)"]
    if default is None or default["id"] == gold["id"]:
        return [f"{project_id}: the default branch must be a child of '{golden}', not '{golden}' itself"]
    problems = []
    if default.get("parent_id") != gold["id"]:
        problems.append(f"{project_id}: the default branch '{default.get('name')}' is not branched from '{golden}'")
    children = [b.get("name") for b in branches if b.get("parent_id") == default["id"]]
    if children:
        problems.append(f"{project_id}: branches of main block its restore: {', '.join(map(str, children))}")
    roles = [r.get("name") for r in await api.branch_roles(project_id, gold["id"]) if not r.get("protected")]
    if not roles:
        return [*problems, f"{project_id}: '{golden}' has no role to connect with"]
    for database, fixture_sql in scripts:
        try:
            uri = await api.connection_uri(project_id, gold["id"], database, str(roles[0]))
            have = set(await fingerprint(uri))
        except Exception as error:
            problems.append(f"{project_id}: '{golden}' has no usable database '{database}': {error}")
            continue
        want = fixture_tables(fixture_sql)
        if have != want:
            missing, extra = sorted(want - have), sorted(have - want)
            problems.append(
                f"{project_id}: '{golden}' does not hold the fixture in '{database}': missing {missing}, extra {extra}"
            )
    return problems


async def create_project(api: NeonAPI, name: str, scripts: FixtureScripts, golden: str) -> str:
    """A pool project: the fixture on root branch `golden`, `main` branched from it as the default."""
    return await create_golden_project(api, name, scripts, golden)


async def plan_pool(
    api: NeonAPI,
    settings: Settings,
    fixtures: dict[str, Path],
    per_fixture: int,
    apply: bool,
    only: set[str] | None = None,
) -> PoolPlan:
    plan = PoolPlan()
    configured = parse_pool(settings.neon_project_pool) if settings.neon_project_pool else {}
    for fixture in sorted(set(configured) - set(fixtures)):
        plan.problems.append(f"fixture '{fixture}' in NEON_PROJECT_POOL is not used by any case: left as it is")
    existing = {p["name"]: p["id"] for p in await api.list_projects(search=POOL_PREFIX) if p.get("name")}
    for fixture, path in sorted(fixtures.items()):
        scripts = read_scripts(path)
        for project_id in configured.get(fixture, []):
            progress(f"checking {project_id} (fixture {fixture})")
            problems = await check_project(api, project_id, scripts, settings.neon_golden_branch)
            plan.problems.extend(problems)
            if not problems:
                plan.good.setdefault(fixture, []).append(project_id)
        index = 1
        wanted = per_fixture if only is None or fixture in only else 0
        while len(plan.good.get(fixture, [])) + sum(f == fixture for f, _ in plan.to_create) < wanted:
            name = f"{POOL_PREFIX}{fixture}-{index}"
            index += 1
            if name in existing and existing[name] not in configured.get(fixture, []):
                progress(f"checking {existing[name]} ({name}, fixture {fixture})")
                problems = await check_project(api, existing[name], scripts, settings.neon_golden_branch)
                if not problems:
                    plan.good.setdefault(fixture, []).append(existing[name])
                else:
                    plan.problems.extend(problems)
                continue
            if name not in existing:
                plan.to_create.append((fixture, name))
    if apply:
        for number, (fixture, name) in enumerate(plan.to_create, start=1):
            count = len(plan.to_create)
            progress(f"creating {number}/{count}: {name} (fixture {fixture}: a new project, then its fixture SQL)")
            project_id = await create_project(api, name, read_scripts(fixtures[fixture]), settings.neon_golden_branch)
            plan.created.append((fixture, project_id))
    return plan


def progress(message: str) -> None:
    """A line on stderr while setup waits on Neon (stdout stays the plan and its pool line)."""
    print(f"pool: {message} ...", file=sys.stderr, flush=True)


def dataset_fixtures() -> dict[str, Path]:
    """Every fixture the cases of `EVAL_DATASET` (or the bundled ones) use, with its SQL file."""
    return {case.fixture: case.fixture_path for case in load_cases() if case.fixture_path is not None}


def _settings() -> tuple[Settings, str]:
    """The run's settings and the API the pool lives on; with `neon` (or no server), Neon's cloud
    API even before NEON_PROJECT_POOL is set, since making the pool is how it gets set."""
    server = (host().server or "").strip()
    if server in ("", "neon", "local"):
        settings = Settings.from_env(env={**process_env(), "EVAL_SERVER": "local"}, warn=False)
        return settings, settings.neon_api_url
    settings = Settings.from_env(warn=False)
    return settings, api_url_for(settings)


def _needs_key(settings: Settings, api_url: str) -> None:
    """Neon's cloud answers nothing without a key: say so first, instead of a refused call's traceback."""
    if settings.neon_api_key is None and (urlsplit(api_url).hostname or "").endswith("neon.tech"):
        raise ConfigError(
            f"NEON_API_KEY is not set: the pool projects are in your Neon account ({api_url}), which setup reads "
            "and writes with it; set NEON_API_KEY in .env (cp .env.example .env) or in the environment"
        )


class PoolAPIError(Exception):
    """A failed API call, as the one line `make pool` prints, and its exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _api_failure(error: NeonAPIError, settings: Settings) -> PoolAPIError:
    """One line for a failed API call: a refused key names the variable that holds it (exit 2, a setting to
    fix); anything else is the API's failure (exit 1)."""
    if error.status in (401, 403):
        given = "was refused" if settings.neon_api_key is not None else "is not set"
        return PoolAPIError(
            f"NEON_API_KEY {given}: {error}; set the key of your Neon account in .env or in the environment", 2
        )
    return PoolAPIError(str(error), 1)


async def _setup(args: argparse.Namespace) -> int:
    settings, api_url = _settings()
    _needs_key(settings, api_url)
    api = api_for(settings, api_url)
    try:
        only = set(args.fixture) if args.fixture else None
        plan = await plan_pool(api, settings, dataset_fixtures(), args.per_fixture, args.apply, only)
    except NeonAPIError as error:
        raise _api_failure(error, settings) from None
    finally:
        await api.aclose()
    for fixture, ids in sorted(plan.good.items()):
        print(f"ready    {fixture}: {', '.join(ids)}")
    for problem in plan.problems:
        print(f"problem  {problem}")
    verb = "created" if args.apply else "would create"
    for fixture, name in plan.to_create:
        print(f"{verb} {name} (fixture {fixture} on branch {settings.neon_golden_branch}, main branched from it)")
    if not args.apply and plan.to_create:
        print("dry run: nothing was created; run again with --apply")
    print(plan.pool_line())
    return 1 if plan.problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.pool", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    setup = commands.add_parser("setup", help="create or check pool projects for every fixture the cases use")
    setup.add_argument("--apply", action="store_true", help="create what is missing (default: dry run)")
    setup.add_argument(
        "--per-fixture",
        type=int,
        default=DEFAULT_PER_FIXTURE,
        help=f"projects per fixture (default {DEFAULT_PER_FIXTURE}: one for each of the nightly's shards)",
    )
    setup.add_argument("--fixture", action="append", help="only add projects for this fixture (repeatable)")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_setup(args))
    except (ConfigError, DatasetError) as error:
        print(f"pool: {error}", file=sys.stderr)
        return 2
    except PoolAPIError as error:
        print(f"pool: {error}", file=sys.stderr)
        return error.code
