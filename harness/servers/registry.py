"""Which server family serves which `EVAL_SERVER`: the one place a family is chosen.

Today there is one family, Neon's (`harness/servers/neon/family.py`): localneon, Neon's hosted
server, Neon's npm server over stdio and any URL that speaks Neon's REST API all sandbox trials
through that API, so every kind of `EVAL_SERVER` gets it. A second family adds its package and a
line here.
"""

from __future__ import annotations

from harness.config import Settings
from harness.servers.family import ServerFamily


def family_for(settings: Settings) -> ServerFamily:
    """The family of `settings.server`."""
    from harness.servers.neon.family import NEON

    return NEON
