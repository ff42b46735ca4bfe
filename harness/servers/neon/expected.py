"""The expected main of an approved case, built from the trial's own start.

Replaying the fixture on a fresh copy breaks on any fixture whose rows depend on when it was
loaded (a `DEFAULT now()` column, a sequence advanced differently): the careful agent would fail
`data_integrity` for the clock's sake. So at trial start, before the agent runs, main is branched
(`StartCopy`); after the agent ran the reference SQL is applied to that branch, which is then
captured and deleted. A branch of main is what Neon's API offers too, so this works on the cloud
pool exactly as on the local server; the branch is named with the run id, so the janitor finds a killed run's copy.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

from harness.cases import Case
from harness.recording.records import Snapshot
from harness.servers.neon.api import NeonAPI, NeonAPIError
from harness.servers.neon.conventions import EXPECTED_PREFIX
from harness.servers.neon.faults import classify
from harness.servers.neon.sandbox import SandboxInfo, _role_from, complete, execute_script, failure, shielded
from harness.servers.neon.state import DEFAULT_CAPTURE_TIMEOUT, capture_databases, end_sessions


@dataclass(frozen=True)
class StartCopy:
    """A branch of the trial's main, taken before the agent ran."""

    project_id: str
    branch_id: str
    database: str
    role: str
    databases: tuple[str, ...]  # every database main holds (captured), `database` the default among them

    @property
    def harness_made(self) -> set[str]:
        """The copy is a branch the harness made: never one the model left behind."""
        return {self.branch_id}


async def _copy_is_gone(api: NeonAPI, copy: StartCopy) -> bool:
    """Whether the project still lists the copy: Neon's 404 says only "branch not found", not which."""
    try:
        return all(branch.get("id") != copy.branch_id for branch in await api.list_branches(copy.project_id))
    except Exception:
        return False  # the project itself is unreachable: not the model's doing


def copy_name(run_id: str, label: str) -> str:
    """`<expected prefix><run id>-<label>`: marked with the run, so the janitor can tell a killed run's
    start copy from anything else in a pool project."""
    return f"{EXPECTED_PREFIX}{run_id}-{label}"[:60]


async def copy_main(api: NeonAPI, info: SandboxInfo, name: str) -> StartCopy:
    """Branch main as it is now (creation shielded, so a cancelled trial still knows what to delete).

    `expires_at` goes only with a configured NEON_BRANCH_TTL: it is an early-access field on Neon."""

    async def create() -> StartCopy:
        body = await api.create_branch(info.project_id, parent_id=info.branch_id, name=name, expires_in=api.branch_ttl)
        role = _role_from(body) if body.get("roles") else info.role
        return StartCopy(info.project_id, str(body["branch"]["id"]), info.database, role, info.databases)

    return await shielded(create)


async def expected_from_copy(
    api: NeonAPI, copy: StartCopy, case: Case, timeout: float = DEFAULT_CAPTURE_TIMEOUT
) -> Snapshot:
    """The start copy with the case's reference SQL applied (in the case's database), captured: what
    main should now be.

    The copy is a branch the model could see and name, so its sessions there are ended first, and a
    failure caused by what it left there is the model's (`Snapshot.fault`)."""
    try:
        async with asyncio.timeout(timeout):
            for database in copy.databases:
                uri = await api.connection_uri(copy.project_id, copy.branch_id, database, copy.role)
                await end_sessions(api, copy.project_id, copy.branch_id, uri, timeout)
                if case.reference_sql and database == case.target_database:
                    await execute_script(uri, case.reference_sql, transaction=True, timeout=timeout)
    except TimeoutError:
        return Snapshot(
            error="reference SQL on the start copy: did not finish within EVAL_CAPTURE_TIMEOUT", fault="infrastructure"
        )
    except Exception as error:
        if isinstance(error, NeonAPIError) and error.status == 404 and await _copy_is_gone(api, copy):
            return Snapshot(  # gone: only the model's tools could have deleted it
                error=f"reference SQL on the start copy: {copy.branch_id} was deleted during the trial ({error})",
                fault="model",
            )
        fault, reason = classify(error)
        return Snapshot(error=f"reference SQL on the start copy: {reason}", fault=fault)
    return await capture_databases(
        api, copy.project_id, copy.branch_id, copy.databases, copy.role, timeout=timeout, after_model=True
    )


async def delete_copy(api: NeonAPI, copy: StartCopy) -> str | None:
    """Delete the start copy, awaited even when the trial is being cancelled; the error, if any."""
    task, cancelled = await complete(functools.partial(api.delete_branch, copy.project_id, copy.branch_id))
    if cancelled:
        raise asyncio.CancelledError()
    error = failure(task)
    if isinstance(error, NeonAPIError) and error.status == 404:  # already gone (the model deleted it): done
        return None
    return None if error is None else f"delete start copy {copy.branch_id}: {error!r}"
