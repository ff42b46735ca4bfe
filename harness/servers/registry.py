"""Which server family serves which `EVAL_SERVER`: the one place a family is chosen.

Two families: Neon's (`harness/servers/neon/family.py`: localneon, Neon's hosted server, Neon's
npm server over stdio and any URL that speaks Neon's REST API, all sandboxing trials through that
API) and DBHub's (`harness/servers/dbhub/family.py`, `EVAL_SERVER=dbhub`: Bytebase's DBHub over
stdio, one process per trial on that trial's own database). A further family adds its package and
a line here.

A record names the family that served it (`TrialConfig.server_family`); the scorers ask this module
for that family's tool roles (`roles_for`) and for the case in its terms (`case_for`), so no scorer
imports a family's package.
"""

from __future__ import annotations

from harness.cases import Case
from harness.config import Settings
from harness.servers.dbhub.published.pin import NAMED_SERVER as DBHUB_SERVER
from harness.servers.family import ServerFamily
from harness.servers.roles import ToolRoles

FAMILIES = ("neon", "dbhub")


def family_for(settings: Settings) -> ServerFamily:
    """The family of `settings.server`."""
    return family_named("dbhub" if settings.server == DBHUB_SERVER else "neon")


def family_named(name: str) -> ServerFamily:
    """A family by its name (a record's `server_family`); ValueError for one there is not."""
    if name == "dbhub":
        from harness.servers.dbhub.family import DBHUB

        return DBHUB
    if name == "neon":
        from harness.servers.neon.family import NEON

        return NEON
    raise ValueError(f"no server family {name!r} (known: {', '.join(FAMILIES)})")


def roles_for(name: str) -> ToolRoles:
    """The tool roles of the family called `name` (leaf modules: no sandbox machinery is loaded)."""
    if name == "dbhub":
        from harness.servers.dbhub.conventions import ROLES as DBHUB_ROLES

        return DBHUB_ROLES
    if name == "neon":
        from harness.servers.neon.conventions import ROLES as NEON_ROLES

        return NEON_ROLES
    raise ValueError(f"no server family {name!r} (known: {', '.join(FAMILIES)})")


def case_for(name: str, case: Case) -> Case:
    """`case` in the terms of the family called `name` (Neon's: as written); `CaseNotServed` when the
    family cannot run it. The same function the family's `case_for` is, without its machinery."""
    if name == "dbhub":
        from harness.servers.dbhub.cases import dbhub_case

        return dbhub_case(case)
    roles_for(name)  # an unknown family is an error, not Neon's terms
    return case
