"""Where the factuality judge runs, read from the environment once per scoring call.

Routing, first match wins (or forced with EVAL_JUDGE_PROVIDER=braintrust|anthropic|openai|none):
1. BRAINTRUST_API_KEY: Braintrust's AI gateway (autoevals' default URL, override with
   BRAINTRUST_AI_GATEWAY_URL), which serves Claude models;
2. ANTHROPIC_API_KEY: Anthropic's OpenAI-compatible endpoint (override with ANTHROPIC_OPENAI_BASE_URL);
3. OPENAI_BASE_URL (+ OPENAI_API_KEY, any value for servers that ignore it): that endpoint.
The model is EVAL_JUDGE_MODEL, else DEFAULT_JUDGE_MODEL. Keys are never logged: `describe()`
leaves them out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast
from urllib.parse import urlsplit, urlunsplit

from autoevals.oai import GATEWAY_URL

DEFAULT_JUDGE_MODEL = "claude-sonnet-4-6"
ANTHROPIC_OPENAI_URL = "https://api.anthropic.com/v1/"
NO_JUDGE_REASON = "no judge configured (set BRAINTRUST_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL)"
PLACEHOLDER_KEY = "not-needed"

Provider = Literal["braintrust", "anthropic", "openai"]
_PROVIDERS: tuple[Provider, ...] = ("braintrust", "anthropic", "openai")


@dataclass(frozen=True)
class JudgeSettings:
    """An OpenAI-compatible endpoint, its key and the judge model."""

    provider: Provider
    base_url: str
    model: str
    api_key: str = field(repr=False)

    def describe(self) -> dict[str, str]:
        """What may be logged about the judge: never the key, nor credentials inside the URL."""
        parts = urlsplit(self.base_url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        public_url = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        return {"judge_provider": self.provider, "judge_base_url": public_url, "judge_model": self.model}


def _settings_for(provider: Provider, env: Mapping[str, str], model: str) -> JudgeSettings | None:
    if provider == "braintrust":
        key = env.get("BRAINTRUST_API_KEY", "").strip()
        url = env.get("BRAINTRUST_AI_GATEWAY_URL", "").strip() or GATEWAY_URL
        return JudgeSettings(provider, url, model, key) if key else None
    if provider == "anthropic":
        key = env.get("ANTHROPIC_API_KEY", "").strip()
        url = env.get("ANTHROPIC_OPENAI_BASE_URL", "").strip() or ANTHROPIC_OPENAI_URL
        return JudgeSettings(provider, url, model, key) if key else None
    url = env.get("OPENAI_BASE_URL", "").strip()
    key = env.get("OPENAI_API_KEY", "").strip() or PLACEHOLDER_KEY
    return JudgeSettings(provider, url, model, key) if url else None


def judge_settings(env: Mapping[str, str] | None = None) -> JudgeSettings | None:
    """The judge to use, or None when none is configured (the factuality score is then skipped)."""
    source = os.environ if env is None else env
    model = source.get("EVAL_JUDGE_MODEL", "").strip() or DEFAULT_JUDGE_MODEL
    forced = source.get("EVAL_JUDGE_PROVIDER", "").strip().lower()
    if forced == "none":
        return None
    if forced in _PROVIDERS:
        return _settings_for(cast(Provider, forced), source, model)
    for provider in _PROVIDERS:
        settings = _settings_for(provider, source, model)
        if settings:
            return settings
    return None
