"""Which server family serves which `EVAL_SERVER`: one table, the one place a family is chosen.

Two families: Neon's (`harness/servers/neon/family.py`: localneon, Neon's hosted server, Neon's
npm server over stdio and any URL that speaks Neon's REST API, all sandboxing trials through that
API) and DBHub's (`harness/servers/dbhub/family.py`, `EVAL_SERVER=dbhub`: Bytebase's DBHub over
stdio, one process per trial on that trial's own database). A further family adds its package and
a row in `FAMILIES`.

A row holds what the scorers need, from the family's leaf modules (its tool roles, its terms for a
case), and names the family's machinery (`ServerFamily`: sandboxes, servers) by module path, loaded
only when a trial is run. So importing this module, as every scorer does through `scorers._common`,
loads no sandbox, agent or settings code, and an edit to a family's machinery moves no scorer's
version (`scorers/versions.py` follows imports, not strings).

A record names the family that served it (`TrialConfig.server_family`); the scorers ask this module
for that family's tool roles (`roles_for`) and for the case in its terms (`case_for`), so no scorer
imports a family's package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from harness.cases import Case
from harness.servers.dbhub.conventions import ROLES as DBHUB_ROLES
from harness.servers.dbhub.published.pin import NAMED_SERVER as DBHUB_SERVER
from harness.servers.dbhub.published.pin import pinned_label as dbhub_label
from harness.servers.neon.conventions import ROLES as NEON_ROLES
from harness.servers.neon.published.pin import NAMED_SERVER as NEON_NPM_SERVER
from harness.servers.neon.published.pin import pinned_label as neon_npm_label
from harness.servers.roles import ToolRoles

if TYPE_CHECKING:
    from harness.config import Settings
    from harness.servers.family import ServerFamily


@dataclass(frozen=True)
class FamilyRow:
    """One family as the registry knows it.

    `terms`: "module:attribute" of the function that puts a case in the family's terms ("" where the
    cases are written in them), loaded when a record of the family is scored; `machinery`:
    "module:attribute" of its `ServerFamily`; `servers`: the `EVAL_SERVER` values it
    serves, each with the `ServerFamily` variant that serves it ("" for `machinery`); `identities`:
    how comparison keys name each of those servers, stably (its pinned package and version); the
    default family serves every value no row names, and names the surface its local twin wears
    (`surface_label`, "module:attribute" of a function of the snapshot's path, loaded when asked)."""

    name: str  # the record's `server_family`
    roles: ToolRoles
    terms: str  # a case as this family runs it; CaseNotServed when it cannot
    machinery: str
    servers: Mapping[str, str] = field(default_factory=dict)
    identities: Mapping[str, Callable[[], str]] = field(default_factory=dict)
    surface_label: str = ""


FAMILIES: tuple[FamilyRow, ...] = (
    FamilyRow(
        "neon",
        NEON_ROLES,
        "",  # the bundled cases are written in Neon's terms
        "harness.servers.neon.family:NEON",
        {NEON_NPM_SERVER: "harness.servers.neon.family:NEON_PUBLISHED"},  # without the tools 0.6.5 lacks
        {NEON_NPM_SERVER: neon_npm_label},
        "harness.servers.neon.surface_label:worn_label",
    ),
    FamilyRow(
        "dbhub",
        DBHUB_ROLES,
        "harness.servers.dbhub.cases:dbhub_case",
        "harness.servers.dbhub.family:DBHUB",
        {DBHUB_SERVER: ""},
        {DBHUB_SERVER: dbhub_label},
    ),
)
DEFAULT_FAMILY = "neon"  # what serves an `EVAL_SERVER` no row names (localneon, a URL, Neon's cloud)


def row_named(name: str) -> FamilyRow:
    """The row of the family called `name` (a record's `server_family`); ValueError for one there is not."""
    for row in FAMILIES:
        if row.name == name:
            return row
    raise ValueError(f"no server family {name!r} (known: {', '.join(row.name for row in FAMILIES)})")


def _attribute(path: str) -> object:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _load(path: str) -> ServerFamily:
    return cast("ServerFamily", _attribute(path))


def pinned_identity(server: str) -> str | None:
    """How comparison keys name the `EVAL_SERVER` value `server` when a family pins it (its package and
    version), else None."""
    for row in FAMILIES:
        if server in row.identities:
            return row.identities[server]()
    return None


def worn_surface_label(path: Path) -> str:
    """The label of the snapshot a local twin wears (the default family's twin)."""
    label = cast("Callable[[Path], str]", _attribute(row_named(DEFAULT_FAMILY).surface_label))
    return label(path)


def family_for(settings: Settings) -> ServerFamily:
    """The family machinery that serves `settings.server`."""
    for row in FAMILIES:
        if settings.server in row.servers:
            return _load(row.servers[settings.server] or row.machinery)
    return family_named(DEFAULT_FAMILY)


def family_named(name: str) -> ServerFamily:
    """A family's machinery by its name (a record's `server_family`)."""
    return _load(row_named(name).machinery)


def roles_for(name: str) -> ToolRoles:
    """The tool roles of the family called `name` (leaf modules: no sandbox machinery is loaded)."""
    return row_named(name).roles


def case_for(name: str, case: Case) -> Case:
    """`case` in the terms of the family called `name`; `CaseNotServed` when the family cannot run
    it. The same function the family's `case_for` is, without its machinery."""
    terms = row_named(name).terms
    return cast("Callable[[Case], Case]", _attribute(terms))(case) if terms else case
