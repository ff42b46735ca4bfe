"""Neon's server family: localneon, Neon's hosted server, Neon's npm server and any server on Neon's API.

Every one of them sandboxes a trial through Neon's REST API (a project or a pool project's main,
restored from its golden branch), reads state through its schema endpoint and a connection URI,
and builds the expected state on a branch of main: `backend.Backend` does all of it for the trial
runner (`harness.servers.family.TrialBackend`).
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.cases import Case
from harness.config import ConfigError, Settings
from harness.mcp.server_process import ServerEndpoints
from harness.servers.family import TrialBackend
from harness.servers.neon.answers import READER
from harness.servers.neon.backend import check_cases, local_backend, refused_key, remote_backend
from harness.servers.neon.conventions import ROLES
from harness.servers.neon.published.pin import PUBLISHED_TOOLS, pinned_label
from harness.servers.roles import CaseNotServed


class NeonFamily:
    name = "neon"
    roles = ROLES
    answers = READER

    def case_for(self, case: Case) -> Case:
        """The bundled cases are written in Neon's terms: every one runs as it is."""
        return case

    def check_start(self, settings: Settings, fixtures: Iterable[str]) -> None:
        check_cases(settings, fixtures)

    def local_backend(self, settings: Settings, endpoints: ServerEndpoints, token: str | None) -> TrialBackend:
        return local_backend(settings, endpoints, token)

    def remote_backend(self, settings: Settings) -> TrialBackend:
        return remote_backend(settings)

    def refused_key(self, settings: Settings, error: BaseException) -> ConfigError | None:
        return refused_key(settings, error)


class PublishedNeonFamily(NeonFamily):
    """Neon's family on its published npm server (`EVAL_SERVER=neon-npm`): a case runs as written,
    unless its plan or its required tools need a tool that version does not have (0.6.5 has no
    get_neon_auth_config or configure_neon_auth, which its Neon Auth cases ask for): no agent could
    pass such a case there, so it is left out, and the run names it (`evals._wiring.served_cases`)."""

    def case_for(self, case: Case) -> Case:
        needed = {*case.required_tools, *(call.tool for call in case.reference_calls)}
        missing = sorted(needed - PUBLISHED_TOOLS)
        if missing:
            raise CaseNotServed(f"case '{case.id}' needs {', '.join(missing)}, which {pinned_label()} does not have")
        return case


NEON = NeonFamily()
NEON_PUBLISHED = PublishedNeonFamily()
