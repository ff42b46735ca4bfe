"""The `control:` provider: the scripted agents of `harness.models.control`, registered like any model.

Why a file here: every provider is one module of this package, found by the registry. The agents
themselves (one module per behaviour, and the `CONTROL_AGENTS` table) live in `harness/models/control/`.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.models.control import CONTROL_AGENTS
from harness.models.providers.base import Provider
from harness.models.providers.registry import provider
from harness.models.rules import ModelRules, Price


def control_rules(name: str) -> ModelRules:
    return ModelRules(f"control:{name}", Price(0.0, 0.0, 0.0, 0.0), status="scripted")


@provider("control", models=lambda: tuple(CONTROL_AGENTS), rules=control_rules)
def make_control_agent(name: str, env: Mapping[str, str]) -> Provider:
    """A scripted agent; needs no key."""
    return CONTROL_AGENTS[name](name)
