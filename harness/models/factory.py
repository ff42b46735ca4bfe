"""Build the provider a model string names, after the same checks configuration made.

Kept apart from `harness.models.providers` so the providers' package never imports configuration
(configuration reads the providers' registry: the other way round would be a cycle)."""

from __future__ import annotations

from harness.config import Settings, check_model
from harness.models.providers.base import Provider
from harness.models.providers.registry import provider_spec


def make_provider(settings: Settings) -> Provider:
    """The provider `settings.model` names (checked again here, so misuse fails clearly)."""
    values = settings.provider_values()
    check_model(settings.model, values)
    spec = provider_spec(settings.provider)
    assert spec is not None  # check_model refused unknown prefixes
    return spec.factory(settings.model_name, values)
