"""The provider registry: one registered unit is all configuration, redaction and the launcher need."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import pytest

from harness.clock import fixed
from harness.config import ConfigError, Settings
from harness.models.control import CONTROL_AGENTS, OracleAgent
from harness.models.factory import make_provider
from harness.models.providers import ModelTurn, Provider, TrialContext, registry
from harness.models.providers.registry import EnvVar, ProviderSpec, model_key_variables
from harness.models.rules import (
    DEFAULT_MODEL,
    ModelRules,
    anthropic_rules,
    deprecation_warning,
    end_of_life_refusal,
)

SECRET = "echo-secret-value-0123456789"


class EchoProvider:
    """A provider a test registers: it exists only to be found through the registry."""

    def __init__(self, name: str, key: str) -> None:
        self.name = f"echo:{name}"
        self.key = key

    def for_trial(self, context: TrialContext) -> Provider:
        return self

    async def complete(self, **_: Any) -> ModelTurn:
        return ModelTurn([{"type": "text", "text": "echo"}], "end_turn")

    async def aclose(self) -> None:
        return None


def _echo(name: str, env: Mapping[str, str]) -> Provider:
    return EchoProvider(name, env["ECHO_KEY"])


@pytest.fixture
def echo_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.provider_specs()  # discover the built-in providers first
    spec = ProviderSpec(
        "echo",
        _echo,
        env=(EnvVar("ECHO_KEY", secret=True, required=True), EnvVar("ECHO_URL")),
        rules=lambda name: ModelRules(f"echo:{name}", sampling=name != "strict"),
    )
    monkeypatch.setitem(registry._REGISTRY, "echo", spec)


def settings(env: dict[str, str]) -> Settings:
    return Settings.from_env(env=env, dotenv_path=None, warn=False)


@pytest.mark.usefixtures("echo_registered")
def test_a_registered_provider_is_checked_redacted_built_and_known_to_the_launcher() -> None:
    with pytest.raises(ConfigError, match="EVAL_MODEL=echo:x needs ECHO_KEY"):
        settings({"EVAL_MODEL": "echo:x"})
    chosen = settings({"EVAL_MODEL": "echo:x", "ECHO_KEY": SECRET, "ECHO_URL": "http://127.0.0.1:9"})
    assert chosen.public()["echo_key"] == "[REDACTED]" and chosen.public()["echo_url"] == "http://127.0.0.1:9"
    assert SECRET not in json.dumps(chosen.public()) and SECRET not in repr(chosen)
    assert chosen.scrub(f"boom {SECRET}") == "boom [REDACTED]"
    built = make_provider(chosen)
    assert isinstance(built, EchoProvider) and built.key == SECRET and built.name == "echo:x"
    assert "ECHO_KEY" in model_key_variables() and "ECHO_URL" not in model_key_variables()
    with pytest.raises(ConfigError, match="'echo:<model>'"):
        settings({"EVAL_MODEL": "nosuch:model"})


@pytest.mark.usefixtures("echo_registered")
def test_temperature_is_checked_against_the_models_rules_before_any_trial() -> None:
    assert settings({"EVAL_MODEL": "echo:loose", "ECHO_KEY": SECRET, "EVAL_TEMPERATURE": "0"}).temperature == 0
    with pytest.raises(ConfigError) as raised:
        settings({"EVAL_MODEL": "echo:loose,echo:strict", "ECHO_KEY": SECRET, "EVAL_TEMPERATURE": "0"})
    assert "EVAL_TEMPERATURE=0" in str(raised.value) and "echo:strict" in str(raised.value)


def test_current_claude_models_refuse_temperature_and_legacy_ones_take_it() -> None:
    key = {"ANTHROPIC_API_KEY": SECRET, "EVAL_TEMPERATURE": "0"}
    with pytest.raises(ConfigError, match=r"EVAL_TEMPERATURE=0 .*anthropic:claude-sonnet-5-5"):
        settings(key)  # the default model is current, and refuses it
    assert settings({**key, "EVAL_MODEL": "anthropic:claude-haiku-4-5"}).temperature == 0
    with pytest.raises(ConfigError, match="output limit"):
        settings({"ANTHROPIC_API_KEY": SECRET, "EVAL_MAX_TOKENS": "200000"})


def test_control_agents_are_one_entry_each(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"unknown control model control:careless \(known: control:oracle"):
        settings({"EVAL_MODEL": "control:careless"})
    monkeypatch.setitem(CONTROL_AGENTS, "careless", OracleAgent)
    assert settings({"EVAL_MODEL": "control:careless"}).model == "control:careless"


def test_deprecated_models_warn_with_their_date(capsys: pytest.CaptureFixture[str]) -> None:
    env = {"EVAL_MODEL": "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY": SECRET}
    Settings.from_env(env=env, dotenv_path=None, clock=fixed(datetime(2026, 11, 1)))
    err = capsys.readouterr().err
    assert "WARNING: anthropic:claude-sonnet-4-5 is deprecated" in err and "November 30th, 2026" in err
    past = end_of_life_refusal("anthropic:claude-sonnet-4-5", date(2026, 12, 1))
    assert past is not None and "reached end of life on November 30th, 2026" in past
    assert deprecation_warning("anthropic:claude-sonnet-4-5", date(2026, 12, 1)) is None  # refused, not warned
    with pytest.raises(ConfigError, match="EVAL_MODEL: anthropic:claude-sonnet-4-5 reached end of life"):
        Settings.from_env(env=env, dotenv_path=None, clock=fixed(datetime(2026, 12, 1)))
    assert deprecation_warning(DEFAULT_MODEL, date(2026, 11, 1)) is None
    assert anthropic_rules("claude-haiku-4-5-20251001").model == "anthropic:claude-haiku-4-5"
