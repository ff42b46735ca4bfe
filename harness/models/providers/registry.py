"""The provider registry: each provider is one registered unit, as Inspect AI registers model APIs.

Why: adding a provider used to touch an if-chain here, the key checks and the redaction list in
`harness.config`, the price table and the launcher. Now a provider module declares, next to its
code, its prefix (`anthropic` in `anthropic:claude-sonnet-5-5`), the environment variables it
reads (which are required, which are secret), the model names it accepts when the set is closed
(control agents) and its model rules; configuration, redaction, `make_provider` and the launcher
all read that declaration. Every module in `harness/models/providers/` is imported on first lookup, so a
new provider is one file (plus its test).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.models.providers.base import Provider
    from harness.models.rules import ModelRules

ProviderFactory = Callable[[str, Mapping[str, str]], "Provider"]
_NOT_PROVIDERS = {"base", "registry"}


@dataclass(frozen=True)
class EnvVar:
    """An environment variable a provider reads."""

    name: str
    secret: bool = False  # its value is scrubbed from everything recorded and never shown
    required: bool = False  # the provider cannot run without it
    hint: str = ""  # added to the "needs X" error, e.g. "(any non-empty value for servers without auth)"
    check: Callable[[str], str | None] | None = None  # why a set value is wrong (named in the error), or None

    def problem(self, value: str | None) -> str | None:
        """Why `value` cannot be used for this variable (checked before the first trial), or None."""
        return self.check(value) if self.check is not None and value else None


@dataclass(frozen=True)
class ProviderSpec:
    """What the rest of the suite knows about one provider."""

    prefix: str
    factory: ProviderFactory  # (model name, {variable: value}) -> Provider; imports its SDK lazily
    env: tuple[EnvVar, ...] = ()
    models: Callable[[], tuple[str, ...]] | None = None  # the closed set of names, or None for any name
    rules: Callable[[str], ModelRules] | None = None  # what a model accepts and costs; None: nothing known

    @property
    def required(self) -> tuple[EnvVar, ...]:
        return tuple(var for var in self.env if var.required)

    def check_name(self, name: str) -> str | None:
        """Why `name` is not a model of this provider, or None when it is."""
        if not name:
            return f"{self.prefix}: no model name after the colon"
        if self.models is not None and name not in self.models():
            known = ", ".join(f"{self.prefix}:{known}" for known in self.models())
            return f"unknown {self.prefix} model {self.prefix}:{name} (known: {known})"
        return None

    def missing(self, values: Mapping[str, object]) -> list[EnvVar]:
        """The required variables that have no value in `values`."""
        return [var for var in self.required if not values.get(var.name)]


_REGISTRY: dict[str, ProviderSpec] = {}
_DISCOVERED: list[bool] = []


def provider(
    prefix: str,
    *,
    env: tuple[EnvVar, ...] = (),
    models: Callable[[], tuple[str, ...]] | None = None,
    rules: Callable[[str], ModelRules] | None = None,
) -> Callable[[ProviderFactory], ProviderFactory]:
    """Register the decorated factory as the provider for `prefix:` model names."""

    def register(factory: ProviderFactory) -> ProviderFactory:
        existing = _REGISTRY.get(prefix)
        if existing is not None and existing.factory is not factory:
            raise ValueError(f"provider prefix {prefix!r} is registered twice")
        _REGISTRY[prefix] = ProviderSpec(prefix, factory, env, models, rules)
        return factory

    return register


def _discover() -> None:
    """Import every module of `harness.models.providers` once, so their registrations run."""
    if _DISCOVERED:
        return
    _DISCOVERED.append(True)
    package = __name__.rpartition(".")[0]  # this module's own package, without importing it again
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name not in _NOT_PROVIDERS and not module.name.startswith("_"):
            importlib.import_module(f"{package}.{module.name}")


def provider_specs() -> dict[str, ProviderSpec]:
    """Every registered provider, by prefix."""
    _discover()
    return dict(_REGISTRY)


def provider_spec(prefix: str) -> ProviderSpec | None:
    return provider_specs().get(prefix)


def declared_env() -> tuple[EnvVar, ...]:
    """Every variable any provider reads (one entry per name)."""
    seen: dict[str, EnvVar] = {}
    for spec in provider_specs().values():
        for var in spec.env:
            seen.setdefault(var.name, var)
    return tuple(seen.values())


def model_key_variables() -> tuple[str, ...]:
    """Variables that, when set, mean a real model can run (the launcher's offline-default test)."""
    return tuple(var.name for spec in provider_specs().values() for var in spec.required)


def model_rules(model: str) -> ModelRules | None:
    """The rules of `model` ("provider:name"), or None when its provider knows nothing about it."""
    prefix, _, name = model.partition(":")
    spec = provider_spec(prefix)
    if spec is None or spec.rules is None:
        return None
    return spec.rules(name)
