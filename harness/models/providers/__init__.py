"""Model providers behind one turn interface, each registered in `harness.models.providers.registry`.

`harness.models.factory.make_provider` builds the one a model string names."""

from __future__ import annotations

from harness.models.providers.base import ModelTurn, Provider, TrialContext

__all__ = ["ModelTurn", "Provider", "TrialContext"]
