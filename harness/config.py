"""Settings, read once from the environment and `.env`, validated, and carried on every record.

Why one object: a trial record must say exactly how it was produced (model, server, tool view),
and secrets must never leak into records, logs or error messages. Secrets are `SecretStr`, so
`repr(settings)` and `settings.public()` never show them, and `scrub()` removes their values from
any text the harness records (tool results, errors).

A settings module: with `harness/environment.py` (the environment's one snapshot, this machine's
places) and `braintrust_run/settings.py` (a run of the evals), the only code that reads the environment
(`tests/test_architecture.py` checks); everything else is handed a `Settings`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import sys
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from harness.clock import Clock, system_clock
from harness.environment import DEFAULT_RESULTS_DIR
from harness.mcp.toolview import DECOYS, load_overrides
from harness.models.agent import DEFAULT_MAX_RESULT_BYTES
from harness.models.control import FALLBACK_MODELS
from harness.models.providers.registry import declared_env, model_rules, provider_spec, provider_specs
from harness.models.rules import DEFAULT_MAX_TOKENS, DEFAULT_MODEL, deprecation_warning, end_of_life_refusal
from harness.recording.redact import redact_connection_passwords
from harness.servers.registry import pinned_identity, worn_surface_label

MAX_RUN_ID = 40  # it names the results folder and starts every sandbox project's name, which is cut at 64
# (variable, smallest allowed, what it is): numbers whose bounds a refusal names, before any trial.
NUMBER_BOUNDS: dict[str, tuple[float, bool, str]] = {
    "EVAL_MAX_TURNS": (1, True, "a whole number of model calls, at least 1"),
    "EVAL_MAX_TOKENS": (1, True, "a whole number of tokens, at least 1"),
    "EVAL_TRIAL_TIMEOUT": (0, False, "a number of seconds above 0"),
    "EVAL_CAPTURE_TIMEOUT": (0, False, "a number of seconds above 0"),
    "EVAL_MAX_TOOL_RESULT_BYTES": (1000, True, "a whole number of bytes, at least 1000"),
}
DEFAULT_NEON_API_URL = "https://console.neon.tech/api/v2"
DEFAULT_NEON_MCP_URL = "https://mcp.neon.tech/mcp"
REDACTED = "[REDACTED]"


class ConfigError(ValueError):
    """A configuration that cannot run; the message names the variable to fix (never its secret value)."""


class Settings(BaseModel):
    """Everything a run needs to know; immutable once read."""

    model_config = ConfigDict(frozen=True)

    model: str = DEFAULT_MODEL  # "provider:name": the model this Settings object runs
    models: tuple[str, ...] = (DEFAULT_MODEL,)  # every model EVAL_MODEL names (comma-separated), in order
    model_explicit: bool = False  # EVAL_MODEL was set
    fallback_reason: str | None = None  # why a control agent replaced the default model
    # (variable, value) for every variable a registered provider declares and the environment sets
    provider_env: tuple[tuple[str, SecretStr], ...] = ()
    server: str = "local"  # "local" | "neon" | "neon-npm" | "dbhub" | http(s) URL | stdio command
    neon_api_key: SecretStr | None = None
    neon_api_url: str = DEFAULT_NEON_API_URL
    neon_api_url_set: bool = False  # NEON_API_URL was given (a URL server's API is never guessed)
    neon_org_id: str | None = None  # NEON_ORG_ID: for keys that must name their organization
    neon_branch_ttl: timedelta | None = None  # NEON_BRANCH_TTL: expires_at on branches the harness creates
    neon_mcp_url: str = DEFAULT_NEON_MCP_URL
    neon_project_pool: tuple[str, ...] = ()
    neon_golden_branch: str = "golden"
    # EVAL_LOCAL_POOL: local runs reuse projects per fixture (None: as many as run at once; N: at most N;
    # 0, written "off": a fresh project per trial). harness.servers.neon.local_pool says why.
    local_pool: int | None = Field(default=None, ge=0)
    max_turns: int = Field(default=12, ge=1)
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    temperature: float | None = None
    system_prompt: str | None = None
    trial_timeout: float = Field(default=300.0, gt=0)
    # EVAL_CAPTURE_TIMEOUT: the bound on one state capture (schema, data, the sessions ended before it),
    # outside the trial's own timeout: a run ends within the trial timeout plus this.
    capture_timeout: float = Field(default=60.0, gt=0)
    max_tool_result_bytes: int = Field(default=DEFAULT_MAX_RESULT_BYTES, ge=1000)  # EVAL_MAX_TOOL_RESULT_BYTES
    tool_descriptions: Path | None = None
    server_descriptions: Path | None = None  # LOCALNEON_DESCRIPTIONS: the local server's own variant file
    server_surface: Path | None = None  # LOCALNEON_SURFACE: the snapshot the local server wears (`make eval` picks it)
    decoys: int = Field(default=0, ge=0)
    tool_shuffle_seed: int | None = None
    tool_filter: str | None = None
    results_dir: Path = DEFAULT_RESULTS_DIR
    run_id: str = Field(default_factory=lambda: new_run_id())

    @property
    def description_variant(self) -> str:
        """Which tool descriptions the model saw: client-side overrides and/or the server's variant file."""
        parts = [path.stem for path in (self.tool_descriptions, self.server_descriptions) if path]
        return "+".join(parts) or "default"

    @property
    def surface(self) -> str:
        """Whose words the tools were described in: the snapshot the twin wore, its own, or the server's."""
        if self.server_kind != "local":
            return f"as {self.server_identity} serves it"
        if self.server_surface is None:
            return "localneon's own wording"
        return worn_surface_label(self.server_surface)

    @property
    def provider(self) -> str:
        return self.model.split(":", 1)[0]

    @property
    def model_name(self) -> str:
        return self.model.split(":", 1)[1]

    @property
    def server_kind(self) -> str:
        """ "local", "neon", "url" or "stdio" (`neon-npm` and `dbhub` are stdio servers: Neon's published
        one, and Bytebase's DBHub on each trial's own database)."""
        if self.server in ("local", "neon"):
            return self.server
        if self.server.startswith(("http://", "https://")):
            return "url"
        return "stdio"

    @property
    def uses_local_server(self) -> bool:
        """The harness starts its own localneon: for itself, or as the API of a stdio server without
        `NEON_API_URL` (given one, a stdio server's projects live there instead)."""
        return self.server_kind == "local" or (self.server_kind == "stdio" and not self.neon_api_url_set)

    @property
    def server_identity(self) -> str:
        """The server under test as comparison keys name it: stable across runs (a stdio server by its
        package and version, never by a command's ports or secrets)."""
        if (pinned := pinned_identity(self.server)) is not None:
            return pinned
        if self.server_kind == "stdio":
            return stdio_label(self.scrub(self.server))
        return self.server_kind if self.server_kind in ("local", "neon") else self.scrub(self.server)

    @property
    def server_label(self) -> str:
        """The server in experiment names: its kind, or for a stdio server its stable identity."""
        return self.server_identity if self.server_kind == "stdio" else self.server_kind

    def for_model(self, model: str) -> Settings:
        """A copy that runs `model` (one of a comma-separated EVAL_MODEL list); keys and rules are checked."""
        check_model(model, self.provider_values(), self.temperature, self.max_tokens)
        return self.model_copy(update={"model": model})

    def provider_values(self) -> dict[str, str]:
        """The provider variables that are set, by name (secrets included: for building clients only)."""
        return {name: value.get_secret_value() for name, value in self.provider_env}

    def secret_values(self) -> list[str]:
        """Every secret value this configuration holds (for scrubbing recorded text)."""
        secret_names = {var.name for var in declared_env() if var.secret}
        found = [value.get_secret_value() for name, value in self.provider_env if name in secret_names]
        if self.neon_api_key:
            found.append(self.neon_api_key.get_secret_value())
        return [value for value in found if value]

    def scrub(self, text: str, extra: list[str] | None = None) -> str:
        return scrub(text, [*self.secret_values(), *(extra or [])])

    def public(self) -> dict[str, Any]:
        """The settings as plain JSON-able data with secrets reduced to whether they are set."""
        data = self.model_dump(mode="json", exclude={"provider_env"})
        data["neon_api_key"] = REDACTED if self.neon_api_key is not None else None
        data["surface"] = self.surface  # whose words the tools wore: the file alone does not say
        values = self.provider_values()
        for var in declared_env():
            value = values.get(var.name)
            data[var.name.lower()] = (REDACTED if var.secret else self.scrub(value)) if value else None
        return data

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        dotenv_path: str | Path | None = ".env",
        warn: bool = True,
        clock: Clock = system_clock,
    ) -> Settings:
        """Read settings from `env` (default: the process environment) layered over `.env`.

        Real environment variables always win over `.env`. With no key for the default provider and
        no explicit `EVAL_MODEL`, fall back to a control agent and say so on stderr; with an explicit
        model and no key, raise ConfigError naming the missing variable. For a run (`warn`), a model
        past its end of life on `clock`'s date is a ConfigError: every trial would fail otherwise.
        """
        merged: dict[str, str] = {}
        if dotenv_path is not None and Path(dotenv_path).is_file():
            try:
                values = dotenv_values(dotenv_path, encoding="utf-8")
            except UnicodeDecodeError as error:
                where = Path(dotenv_path).resolve()
                raise ConfigError(f"{where}: not UTF-8 text ({error.reason} at byte {error.start})") from None
            merged.update({k: v for k, v in values.items() if v is not None})
        merged.update(os.environ if env is None else env)
        settings = _parse(merged)
        if warn:
            today = clock().date()
            for model in settings.models:
                if refusal := end_of_life_refusal(model, today):
                    raise ConfigError(refusal)
            notices = [settings.fallback_reason] if settings.fallback_reason else []
            notices += [notice for model in settings.models if (notice := deprecation_warning(model, today))]
            for notice in notices:
                print(f"harness: WARNING: {notice}", file=sys.stderr, flush=True)
        return settings


def stdio_label(command: str) -> str:
    """A stdio command line without what changes between runs: a port (`--port=51234`, `:51234`),
    a temporary folder; a package run from node_modules is named by its package.json."""
    try:
        words = shlex.split(command)  # as the command is run: a quoted path may hold spaces
    except ValueError:
        words = command.split()
    for word in words:
        found = _package_of(word)
        if found:
            return found
    command = re.sub(r"(?<=[:=])\d{2,5}\b", "<port>", command)
    return re.sub(r"/tmp/[^\s]+", "<tmp>", command)


def _package_of(word: str) -> str | None:
    """`name@version` of the npm package a path inside node_modules belongs to, if it is one."""
    match = re.search(r"^(.*/node_modules/(?:@[^/]+/)?[^/]+)/", word)
    if not match:
        return None
    try:
        manifest = json.loads(Path(match.group(1), "package.json").read_text(encoding="utf-8"))
        return f"{manifest['name']}@{manifest['version']}"
    except (OSError, ValueError, KeyError):
        return None


def new_run_id(clock: Clock = system_clock) -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return clock().strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def scrub(text: str, values: list[str]) -> str:
    """Replace every occurrence of each secret value (longest first), and every password of a
    connection string (which a server hands out without the harness knowing it), by a marker."""
    for value in sorted({v for v in values if v and len(v) >= 4}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return redact_connection_passwords(text)


def parse_duration(name: str, text: str) -> timedelta:
    """'90s', '30m', '2h', '1d' (or a bare number of seconds); ConfigError naming `name` otherwise."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not match:
        raise ConfigError(f"{name}: {text!r} is not a duration (use e.g. 30m, 2h, 1d)")
    return timedelta(seconds=float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2) or "s"])


def check_model(
    model: str, values: Mapping[str, str], temperature: float | None = None, max_tokens: int | None = None
) -> None:
    """Raise ConfigError when `model` is malformed, unknown, lacks its provider's variables, or refuses
    the sampling settings: all before the first trial, so a run never turns into a pile of 400s."""
    prefix, sep, name = model.partition(":")
    spec = provider_spec(prefix)
    if not sep or spec is None:
        shapes = ", ".join(f"'{known}:<model>'" for known in sorted(provider_specs()))
        raise ConfigError(f"EVAL_MODEL: {model!r} must look like one of {shapes}")
    problem = spec.check_name(name)
    if problem:
        raise ConfigError(f"EVAL_MODEL: {problem}")
    for var in spec.missing(values):
        raise ConfigError(f"EVAL_MODEL={model} needs {var.name}{var.hint}, which is not set")
    for var in spec.env:
        if problem := var.problem(values.get(var.name)):
            raise ConfigError(problem)
    rules = model_rules(model)
    if rules is None:
        return
    refusal = rules.refusal(temperature)
    if refusal:
        raise ConfigError(refusal)
    if max_tokens is not None and rules.max_output_tokens is not None and max_tokens > rules.max_output_tokens:
        raise ConfigError(
            f"EVAL_MAX_TOKENS={max_tokens} is above {model}'s output limit of {rules.max_output_tokens} tokens"
        )


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value.strip() if value is not None and value.strip() else None


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float]) -> Any:
    raw = _get(env, name)
    if raw is None:
        return None
    try:
        return kind(raw)
    except ValueError as error:
        raise ConfigError(f"{name} must be a {kind.__name__}, got {raw!r}") from error


def _check_bounds(name: str, value: float) -> None:
    bounds = NUMBER_BOUNDS.get(name)
    if bounds is None:
        return
    smallest, inclusive, allowed = bounds
    if value < smallest or (value == smallest and not inclusive):
        raise ConfigError(f"{name}={value:g} is not allowed: it must be {allowed}")


def _secret(env: Mapping[str, str], name: str) -> SecretStr | None:
    value = _get(env, name)
    return SecretStr(value) if value else None


def _models(env: Mapping[str, str], provider_values: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """The models to run and, when control agents stand in for the default model, why."""
    explicit = _get(env, "EVAL_MODEL")
    if explicit:
        models = tuple(m.strip() for m in explicit.split(",") if m.strip())
        if not models:
            raise ConfigError("EVAL_MODEL names no model")
        return models, None
    default_spec = provider_spec(DEFAULT_MODEL.partition(":")[0])
    missing = default_spec.missing(provider_values) if default_spec else []
    if missing:
        reason = (
            f"no {missing[0].name} and no EVAL_MODEL: running the control agents {', '.join(FALLBACK_MODELS)} "
            f"instead of {DEFAULT_MODEL}; these results measure no model"
        )
        return FALLBACK_MODELS, reason
    return (DEFAULT_MODEL,), None


def _local_pool(env: Mapping[str, str]) -> int | None:
    """`EVAL_LOCAL_POOL`: unset or `auto` (None), `off` (0), or a number of projects per fixture."""
    raw = (_get(env, "EVAL_LOCAL_POOL") or "auto").lower()
    if raw == "auto":
        return None
    if raw == "off":
        return 0
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(
            f"EVAL_LOCAL_POOL must be 'auto' (a project per trial running at once, per fixture), 'off' "
            f"(a fresh project per trial) or a whole number of projects per fixture of at least 1, got {raw!r}"
        )
    return int(raw)


def _parse(env: Mapping[str, str]) -> Settings:
    values: dict[str, Any] = {}
    provider_env = tuple((var.name, SecretStr(value)) for var in declared_env() if (value := _get(env, var.name)))
    provider_values = {name: secret.get_secret_value() for name, secret in provider_env}
    models, fallback_reason = _models(env, provider_values)
    explicit = _get(env, "EVAL_MODEL") is not None
    values.update(model=models[0], models=models, model_explicit=explicit, fallback_reason=fallback_reason)
    values["provider_env"] = provider_env

    server = _get(env, "EVAL_SERVER") or "local"
    values["server"] = server
    values["neon_api_key"] = _secret(env, "NEON_API_KEY")
    values["neon_api_url"] = (_get(env, "NEON_API_URL") or DEFAULT_NEON_API_URL).rstrip("/")
    values["neon_api_url_set"] = _get(env, "NEON_API_URL") is not None
    values["neon_org_id"] = _get(env, "NEON_ORG_ID")
    ttl = _get(env, "NEON_BRANCH_TTL")
    if ttl:
        values["neon_branch_ttl"] = parse_duration("NEON_BRANCH_TTL", ttl)
        if not timedelta(minutes=1) <= values["neon_branch_ttl"] <= timedelta(days=30):
            raise ConfigError("NEON_BRANCH_TTL must be between 1m and 30d (Neon's limit for expires_at)")
    values["neon_mcp_url"] = _get(env, "NEON_MCP_URL") or DEFAULT_NEON_MCP_URL
    pool = _get(env, "NEON_PROJECT_POOL")
    values["neon_project_pool"] = tuple(p.strip() for p in pool.split(",") if p.strip()) if pool else ()
    values["neon_golden_branch"] = _get(env, "NEON_GOLDEN_BRANCH") or "golden"
    if server == "neon":
        if values["neon_api_key"] is None:
            raise ConfigError("EVAL_SERVER=neon needs NEON_API_KEY, which is not set")
        if not values["neon_project_pool"]:
            raise ConfigError("EVAL_SERVER=neon needs NEON_PROJECT_POOL (comma-separated dedicated project ids)")

    values["local_pool"] = _local_pool(env)
    for name, field, kind in (
        ("EVAL_MAX_TURNS", "max_turns", int),
        ("EVAL_MAX_TOKENS", "max_tokens", int),
        ("EVAL_TEMPERATURE", "temperature", float),
        ("EVAL_TRIAL_TIMEOUT", "trial_timeout", float),
        ("EVAL_CAPTURE_TIMEOUT", "capture_timeout", float),
        ("EVAL_MAX_TOOL_RESULT_BYTES", "max_tool_result_bytes", int),
        ("EVAL_DECOYS", "decoys", int),
        ("EVAL_TOOL_SHUFFLE_SEED", "tool_shuffle_seed", int),
    ):
        number = _number(env, name, kind)
        if number is not None:
            _check_bounds(name, number)
            values[field] = number
    if values.get("decoys", 0) > len(DECOYS):
        raise ConfigError(
            f"EVAL_DECOYS={values['decoys']} is more than the {len(DECOYS)} decoy tools there are (0-{len(DECOYS)})"
        )
    if values.get("decoys", 0) < 0:
        raise ConfigError(f"EVAL_DECOYS={values['decoys']} must be from 0 to {len(DECOYS)}")

    prompt = _get(env, "EVAL_SYSTEM_PROMPT")
    if prompt and prompt.startswith("@"):
        try:
            prompt = Path(prompt[1:]).read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"EVAL_SYSTEM_PROMPT: cannot read {prompt[1:]}: {error.strerror}") from error
        except UnicodeDecodeError as error:
            raise ConfigError(f"EVAL_SYSTEM_PROMPT: {prompt[1:]} is not UTF-8 text ({error.reason})") from error
    values["system_prompt"] = prompt
    descriptions = _get(env, "EVAL_TOOL_DESCRIPTIONS")
    if descriptions:
        if not Path(descriptions).is_file():
            raise ConfigError(f"EVAL_TOOL_DESCRIPTIONS: no such file {descriptions}")
        try:
            load_overrides(Path(descriptions))
        except (yaml.YAMLError, ValueError, UnicodeDecodeError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ConfigError(
                f"EVAL_TOOL_DESCRIPTIONS: {descriptions} is not a YAML mapping of tool name to text: {first}"
            ) from None
        values["tool_descriptions"] = Path(descriptions)
    server_descriptions = _get(env, "LOCALNEON_DESCRIPTIONS")
    if server_descriptions:
        values["server_descriptions"] = Path(server_descriptions)
    for name in ("LOCALNEON_DESCRIPTIONS", "LOCALNEON_SURFACE"):  # read by the local server, which would die at start
        given = _get(env, name)
        if given and not Path(given).is_file():
            raise ConfigError(f"{name}={given}: no such file (give the path of a YAML file, or unset it)")
    if _get(env, "LOCALNEON_SURFACE"):
        values["server_surface"] = Path(str(_get(env, "LOCALNEON_SURFACE")))
    tool_filter = _get(env, "EVAL_TOOL_FILTER")
    if tool_filter:
        try:
            re.compile(tool_filter)
        except re.error as error:
            raise ConfigError(f"EVAL_TOOL_FILTER is not a valid regular expression: {error}") from error
        values["tool_filter"] = tool_filter
    values["results_dir"] = Path(_get(env, "EVAL_RESULTS_DIR") or DEFAULT_RESULTS_DIR)
    if values["results_dir"].exists() and not values["results_dir"].is_dir():
        raise ConfigError(f"EVAL_RESULTS_DIR={values['results_dir']} is a file; it must be a folder (or not exist yet)")
    for model in models:
        check_model(model, provider_values, values.get("temperature"), values.get("max_tokens"))
    run_id = _get(env, "EVAL_RUN_ID")
    if run_id:
        if len(run_id) > MAX_RUN_ID:
            raise ConfigError(
                f"EVAL_RUN_ID is {len(run_id)} characters ({run_id[:20]}...); at most {MAX_RUN_ID} are allowed "
                "(it starts every sandbox project's name)"
            )
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", run_id) or set(run_id) == {"."}:
            raise ConfigError(
                f"EVAL_RUN_ID {run_id!r} is not a folder name: use letters, digits, '_', '.', '-' "
                "(not '.' or '..', no path separator)"
            )
        values["run_id"] = run_id
    try:
        return Settings(**values)
    except ValueError as error:
        raise ConfigError(f"invalid settings: {error}") from None
