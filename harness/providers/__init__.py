"""Model providers behind one turn interface, each registered in `harness.providers.registry`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.providers.base import ModelTurn, Provider, TrialContext

if TYPE_CHECKING:
    from harness.config import Settings

__all__ = ["ModelTurn", "Provider", "TrialContext", "make_provider"]


def make_provider(settings: Settings) -> Provider:
    """The provider `settings.model` names (checked again here, so misuse fails clearly)."""
    from harness.config import check_model
    from harness.providers.registry import provider_spec

    values = settings.provider_values()
    check_model(settings.model, values)
    spec = provider_spec(settings.provider)
    assert spec is not None  # check_model refused unknown prefixes
    return spec.factory(settings.model_name, values)
