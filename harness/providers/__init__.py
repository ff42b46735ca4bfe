"""Model providers behind one turn interface: Anthropic, OpenAI-compatible, control agents."""

from __future__ import annotations

from harness.config import ConfigError, Settings
from harness.providers.base import ModelTurn, Provider, TrialContext
from harness.providers.control import ControlAgent

__all__ = ["ModelTurn", "Provider", "TrialContext", "make_provider"]


def make_provider(settings: Settings) -> Provider:
    """The provider `settings.model` names (keys checked again here, so misuse fails clearly)."""
    provider, name = settings.provider, settings.model_name
    if provider == "control":
        if name == "lexical":
            from harness.providers.lexical import LexicalAgent

            return LexicalAgent()
        if name == "sloppy":
            from harness.providers.sloppy import SloppyAgent  # it builds on ControlAgent

            return SloppyAgent(name)
        return ControlAgent(name)
    if provider == "anthropic":
        if settings.anthropic_api_key is None:
            raise ConfigError(f"EVAL_MODEL={settings.model} needs ANTHROPIC_API_KEY, which is not set")
        from harness.providers.anthropic import AnthropicProvider

        return AnthropicProvider(name, settings.anthropic_api_key.get_secret_value(), settings.anthropic_base_url)
    if provider == "openai":
        if settings.openai_api_key is None:
            raise ConfigError(f"EVAL_MODEL={settings.model} needs OPENAI_API_KEY, which is not set")
        from harness.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider(name, settings.openai_api_key.get_secret_value(), settings.openai_base_url)
    raise ConfigError(f"EVAL_MODEL: unknown provider {provider!r}")
