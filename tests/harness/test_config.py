"""Configuration: fallback to control agents, clear errors, secrets kept out of everything recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import ConfigError, Settings
from harness.models.control import FALLBACK_MODELS as CONTROL_MODELS
from harness.models.rules import DEFAULT_MODEL
from harness.recording.records import TrialConfig, TrialRecord
from harness.recording.store import ResultsStore, load_run
from tests.harness.conftest import settings_from

SECRET = "fake-anthropic-test-SECRET-value-0123456789"
NEON_SECRET = "napi_SECRET_neon_key_abcdef"


def test_no_key_and_no_model_falls_back_to_control_agents_loudly(capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings.from_env(env={}, dotenv_path=None)
    assert settings.model == "control:oracle"
    assert settings.models == CONTROL_MODELS
    assert settings.fallback_reason and "ANTHROPIC_API_KEY" in settings.fallback_reason
    err = capsys.readouterr().err
    assert "WARNING" in err and "control:oracle" in err


def test_key_without_model_uses_the_default_model() -> None:
    settings = settings_from({"ANTHROPIC_API_KEY": SECRET})
    assert settings.model == DEFAULT_MODEL and settings.fallback_reason is None


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"EVAL_MODEL": "anthropic:claude-haiku-4-5"}, "ANTHROPIC_API_KEY"),
        ({"EVAL_MODEL": "openai:gpt-4o-mini"}, "OPENAI_API_KEY"),
        ({"EVAL_MODEL": "control:oracle,anthropic:claude-sonnet-4-6"}, "ANTHROPIC_API_KEY"),
        ({"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "neon"}, "NEON_API_KEY"),
        ({"EVAL_MODEL": "control:oracle", "EVAL_SERVER": "neon", "NEON_API_KEY": NEON_SECRET}, "NEON_PROJECT_POOL"),
    ],
)
def test_explicit_choice_without_its_key_is_a_clear_error(env: dict[str, str], missing: str) -> None:
    with pytest.raises(ConfigError, match=missing) as raised:
        settings_from(env)
    assert NEON_SECRET not in str(raised.value)


@pytest.mark.parametrize(
    "env",
    [
        {"EVAL_MODEL": "gpt-4o"},
        {"EVAL_MODEL": "control:random"},
        {"EVAL_MODEL": "control:oracle", "EVAL_MAX_TURNS": "many"},
        {"EVAL_MODEL": "control:oracle", "EVAL_MAX_TURNS": "0"},
        {"EVAL_MODEL": "control:oracle", "EVAL_TOOL_FILTER": "("},
        {"EVAL_MODEL": "control:oracle", "EVAL_TOOL_DESCRIPTIONS": "/no/such/file.yaml"},
    ],
)
def test_invalid_values_are_rejected(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        settings_from(env)


def test_every_variable_is_read(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Be careful with main.", encoding="utf-8")
    overrides = tmp_path / "descriptions.yaml"
    overrides.write_text("run_sql: Runs SQL.\n", encoding="utf-8")
    settings = settings_from(
        {
            "EVAL_MODEL": "control:oracle,control:unsafe",
            "EVAL_SERVER": "http://127.0.0.1:9/mcp",
            "NEON_API_URL": "http://127.0.0.1:9/api/v2/",
            "NEON_PROJECT_POOL": "a-b-1, c-d-2",
            "NEON_GOLDEN_BRANCH": "gold",
            "EVAL_MAX_TURNS": "5",
            "EVAL_MAX_TOKENS": "900",
            "EVAL_TEMPERATURE": "0.2",
            "EVAL_SYSTEM_PROMPT": f"@{prompt}",
            "EVAL_TRIAL_TIMEOUT": "30",
            "EVAL_TOOL_DESCRIPTIONS": str(overrides),
            "EVAL_DECOYS": "3",
            "EVAL_TOOL_SHUFFLE_SEED": "7",
            "EVAL_TOOL_FILTER": "sql|migration",
            "EVAL_RESULTS_DIR": str(tmp_path / "out"),
        }
    )
    assert settings.models == ("control:oracle", "control:unsafe")
    assert settings.for_model("control:unsafe").model == "control:unsafe"
    assert settings.server_kind == "url"
    assert settings.neon_api_url == "http://127.0.0.1:9/api/v2"
    assert settings.neon_project_pool == ("a-b-1", "c-d-2")
    assert (settings.neon_golden_branch, settings.max_turns, settings.max_tokens) == ("gold", 5, 900)
    assert settings.temperature == 0.2 and settings.trial_timeout == 30
    assert settings.system_prompt == "Be careful with main."
    assert settings.tool_descriptions == overrides
    assert (settings.decoys, settings.tool_shuffle_seed, settings.tool_filter) == (3, 7, "sql|migration")
    assert settings.results_dir == tmp_path / "out"


def test_dotenv_never_overrides_the_real_environment(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("EVAL_MODEL=control:unsafe\nEVAL_MAX_TURNS=3\n", encoding="utf-8")
    settings = Settings.from_env(env={"EVAL_MODEL": "control:oracle"}, dotenv_path=dotenv, warn=False)
    assert settings.model == "control:oracle"
    assert settings.max_turns == 3


def test_secrets_never_in_repr_public_records_or_store(tmp_path: Path) -> None:
    settings = settings_from(
        {
            "ANTHROPIC_API_KEY": SECRET,
            "NEON_API_KEY": NEON_SECRET,
            "EVAL_SERVER": "neon",
            "NEON_PROJECT_POOL": "p-q-1",
            "EVAL_RESULTS_DIR": str(tmp_path),
        }
    )
    assert SECRET not in repr(settings) and NEON_SECRET not in repr(settings) and SECRET not in str(settings)
    assert SECRET not in json.dumps(settings.public())
    assert settings.scrub(f"error: bad key {SECRET} and {NEON_SECRET}") == "error: bad key [REDACTED] and [REDACTED]"
    record = TrialRecord(case_id="c", config=TrialConfig(model=settings.model, server=settings.server))
    store = ResultsStore(settings.results_dir, settings.run_id)
    store.write_run(settings)
    store.append(record)
    for path in (store.run_dir / "run.json", store.trials_path):
        text = path.read_text(encoding="utf-8")
        assert SECRET not in text and NEON_SECRET not in text
    info, records = load_run(store.run_dir)
    assert info["settings"]["anthropic_api_key"] == "[REDACTED]" and len(records) == 1


def test_description_variant_names_both_the_client_overrides_and_the_server_file(tmp_path: Path) -> None:
    overrides = tmp_path / "terse.yaml"
    overrides.write_text("run_sql: Runs SQL.\n")
    assert settings_from({}).description_variant == "default"
    assert settings_from({"EVAL_TOOL_DESCRIPTIONS": str(overrides)}).description_variant == "terse"
    server_file = tmp_path / "verbose-v2.yaml"
    server_file.write_text("{}\n")
    both = settings_from({"EVAL_TOOL_DESCRIPTIONS": str(overrides), "LOCALNEON_DESCRIPTIONS": str(server_file)})
    assert both.description_variant == "terse+verbose-v2"
