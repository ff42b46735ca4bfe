"""DBHub's server family: Bytebase's DBHub (`@bytebase/dbhub`, pinned in `published/`) over stdio.

`EVAL_SERVER=dbhub`. A trial's sandbox, state and expected state are the Neon family's on the
harness's localneon (`backend.py` says why); its MCP server is a DBHub process of its own on that
sandbox's database (`stdio.py`). DBHub's tools have no staging step (`conventions.ROLES`), and the
bundled cases, written in Neon's terms, read in DBHub's through `cases.dbhub_case`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from harness.cases import Case
from harness.config import ConfigError, Settings
from harness.mcp.server_process import ServerEndpoints
from harness.servers.dbhub.backend import local_backend, remote_backend
from harness.servers.dbhub.cases import dbhub_case
from harness.servers.dbhub.conventions import ROLES
from harness.servers.dbhub.published.install import NpmInstallError, ensure_installed
from harness.servers.dbhub.published.pin import NAMED_SERVER
from harness.servers.family import TrialBackend
from harness.servers.neon.backend import refused_key as neon_refused_key
from harness.servers.roles import AnswerReader


class DBHubFamily:
    name = "dbhub"
    roles = ROLES
    answers = AnswerReader()  # no staging tool, no branches: its answers name nothing an agent must carry

    def case_for(self, case: Case) -> Case:
        return dbhub_case(case)

    def check_start(self, settings: Settings, fixtures: Iterable[str]) -> None:
        """Install DBHub now (at start, before any trial), saying so when npm ran."""
        log: list[str] = []
        try:
            ensure_installed(log=log)
        except NpmInstallError as error:
            raise ConfigError(f"EVAL_SERVER={NAMED_SERVER}: {error}") from None
        for line in log:
            print(f"harness: {line}", file=sys.stderr, flush=True)

    def local_backend(self, settings: Settings, endpoints: ServerEndpoints, token: str | None) -> TrialBackend:
        return local_backend(settings, endpoints, token)

    def remote_backend(self, settings: Settings) -> TrialBackend:
        return remote_backend(settings)

    def refused_key(self, settings: Settings, error: BaseException) -> ConfigError | None:
        """Sandboxes are made through Neon's API (`backend.py`): its refusal is Neon's."""
        return neon_refused_key(settings, error)


DBHUB = DBHubFamily()
