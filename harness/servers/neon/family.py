"""Neon's server family: localneon, Neon's hosted server, Neon's npm server and any server on Neon's API.

Every one of them sandboxes a trial through Neon's REST API (a project or a pool project's main,
restored from its golden branch), reads state through its schema endpoint and a connection URI,
and builds the expected state on a branch of main: `backend.Backend` does all of it for the trial
runner (`harness.servers.family.TrialBackend`).
"""

from __future__ import annotations

from harness.config import Settings
from harness.mcp.server_process import ServerEndpoints
from harness.servers.family import TrialBackend
from harness.servers.neon.backend import local_backend, remote_backend


class NeonFamily:
    name = "neon"

    def local_backend(self, settings: Settings, endpoints: ServerEndpoints, token: str | None) -> TrialBackend:
        return local_backend(settings, endpoints, token)

    def remote_backend(self, settings: Settings) -> TrialBackend:
        return remote_backend(settings)


NEON = NeonFamily()
