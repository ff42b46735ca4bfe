"""Neon's server family: localneon, Neon's hosted server, Neon's npm server and any server on Neon's API.

Every one of them sandboxes a trial through Neon's REST API (a project or a pool project's main,
restored from its golden branch), reads state through its schema endpoint and a connection URI,
and builds the expected state on a branch of main: `backend.Backend` does all of it for the trial
runner (`harness.servers.family.TrialBackend`).
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.cases import Case
from harness.config import Settings
from harness.mcp.server_process import ServerEndpoints
from harness.servers.family import TrialBackend
from harness.servers.neon.backend import check_cases, local_backend, remote_backend
from harness.servers.neon.conventions import ROLES


class NeonFamily:
    name = "neon"
    roles = ROLES

    def case_for(self, case: Case) -> Case:
        """The bundled cases are written in Neon's terms: every one runs as it is."""
        return case

    def check_start(self, settings: Settings, fixtures: Iterable[str]) -> None:
        check_cases(settings, fixtures)

    def local_backend(self, settings: Settings, endpoints: ServerEndpoints, token: str | None) -> TrialBackend:
        return local_backend(settings, endpoints, token)

    def remote_backend(self, settings: Settings) -> TrialBackend:
        return remote_backend(settings)


NEON = NeonFamily()
