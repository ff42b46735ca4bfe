"""What a model's server says about itself: its context window, its slots, and what an overflow looks like.

Why: a local open-weights model (llama.cpp's `llama-server`, vLLM, Ollama) is in no rules table, so
its context window is read from the server, or set with EVAL_CONTEXT_WINDOW. Facts, from
llama.cpp's tools/server (server-context.cpp, server-common.cpp, checked 2026-12-01): `GET /props`
answers `default_generation_settings.n_ctx` (the context of one slot) and `total_slots`;
`GET /v1/models` answers `data[].meta.n_ctx` (vLLM answers `data[].max_model_len`). A prompt too
long for the slot is a 400 with `error.type = "exceed_context_size_error"`, `n_prompt_tokens` and
`n_ctx`, on both the chat-completions and the Messages routes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

if TYPE_CHECKING:
    from harness.models.rules import ModelRules

CONTEXT_VARIABLE = "EVAL_CONTEXT_WINDOW"
PROBE_TIMEOUT_S = 5.0
# The words servers use for a prompt longer than the context: llama-server, OpenAI, vLLM, Anthropic.
_OVERFLOW = re.compile(
    r"exceeds? the available context size|larger than the max context size|maximum context length|"
    r"context_length_exceeded|prompt is too long|exceed_context_size",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ServerLimits:
    """What the server reported (None for what it did not say)."""

    context_window: int | None = None
    slots: int | None = None


def endpoint_key(base_url: str | None) -> str | None:
    """`host:port` of a base URL, so the OpenAI and Anthropic routes of one server share one key."""
    if not base_url:
        return None
    parts = urlsplit(base_url.strip())
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname.lower()}:{port}"


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without a trailing `/v1` (where `/props` lives)."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def context_window_setting(env: Mapping[str, str]) -> int | None:
    """EVAL_CONTEXT_WINDOW as a number of tokens, or None when unset; ValueError naming it when wrong."""
    raw = (env.get(CONTEXT_VARIABLE) or "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{CONTEXT_VARIABLE}: {raw!r} is not a number of tokens (a whole number >= 1, e.g. 8192)")
    return int(raw)


def check_context_window(value: str) -> str | None:
    """Why EVAL_CONTEXT_WINDOW's value is wrong, or None (the registry's check, run at start)."""
    try:
        context_window_setting({CONTEXT_VARIABLE: value})
    except ValueError as error:
        return str(error)
    return None


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def limits_from_props(body: Any) -> ServerLimits:
    """llama-server's `/props` answer as limits."""
    if not isinstance(body, dict):
        return ServerLimits()
    settings = body.get("default_generation_settings")
    window = _number(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return ServerLimits(window or _number(body.get("n_ctx")), _number(body.get("total_slots")))


def limits_from_models(body: Any, model: str) -> ServerLimits:
    """An OpenAI-style `/v1/models` answer (llama-server's `meta.n_ctx`, vLLM's `max_model_len`)."""
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return ServerLimits()
    chosen = [entry for entry in entries if isinstance(entry, dict) and entry.get("id") == model] or [
        entry for entry in entries if isinstance(entry, dict)
    ][:1]
    for entry in chosen:
        meta = entry.get("meta")
        window = (_number(meta.get("n_ctx")) if isinstance(meta, dict) else None) or _number(entry.get("max_model_len"))
        if window:
            return ServerLimits(window)
    return ServerLimits()


async def read_limits(base_url: str, model: str, headers: Mapping[str, str] | None = None) -> ServerLimits:
    """Ask the server at `base_url` for its context window and slots; nothing known on any failure.

    A remote API without these endpoints answers 404 (or needs other auth): that is not an error, the
    model's rules or EVAL_CONTEXT_WINDOW say the window then."""
    root = server_root(base_url)
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S, headers=dict(headers or {})) as client:
        found = ServerLimits()
        for path, parse in (
            ("/props", limits_from_props),
            ("/v1/models", lambda body: limits_from_models(body, model)),
        ):
            try:
                response = await client.get(root + path)
                body = response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                continue
            limits = parse(body)
            found = ServerLimits(found.context_window or limits.context_window, found.slots or limits.slots)
            if found.context_window:
                return found
    return found


# llama-server's 500 when the model's reply opened a tool call it could not parse (its chat parser:
# "The model produced output that does not match the expected peg-native format").
_UNPARSED_CALL = re.compile(r"does not match the expected .*format|failed to parse tool call", re.IGNORECASE)


def unparsed_call_detail(status: int, body: Any, message: str) -> str | None:
    """Why a server error was the model's own: a tool call it wrote that the server could not parse."""
    if status != 500:
        return None
    inner = body.get("error", body) if isinstance(body, dict) else {}
    text = str((inner.get("message") if isinstance(inner, dict) else None) or message)
    if not _UNPARSED_CALL.search(text):
        return None
    return f"the model wrote a tool call the server could not parse: HTTP {status}: {text}"


def overflow_detail(status: int, body: Any, message: str) -> str | None:
    """Why a refused request was a prompt longer than the context window, or None when it was not.

    The server's own numbers are kept (llama-server's `n_prompt_tokens` and `n_ctx`)."""
    if status not in (400, 413):
        return None
    inner = body.get("error", body) if isinstance(body, dict) else {}
    inner = inner if isinstance(inner, dict) else {}
    text = str(inner.get("message") or message)
    kind = str(inner.get("type") or inner.get("code") or "")
    if not (_OVERFLOW.search(text) or _OVERFLOW.search(kind)):
        return None
    prompt, window = _number(inner.get("n_prompt_tokens")), _number(inner.get("n_ctx"))
    sizes = f" (prompt {prompt} tokens, context {window} tokens)" if prompt and window else ""
    return f"the prompt outgrew the model's context window{sizes}: HTTP {status}: {text}"


async def provider_limits(provider: object) -> ServerLimits:
    """What a provider knows of its model's limits (model providers only; control agents have none)."""
    limits = getattr(provider, "limits", None)
    return await limits() if callable(limits) else ServerLimits()


def unlisted_model_notice(model: str, rules: ModelRules | None, limits: ServerLimits) -> str | None:
    """One line for a model no rules table lists (a local model): what the suite assumes about it."""
    if rules is None or rules.price is not None or model.startswith("control:"):
        return None
    window = f"context window {limits.context_window} tokens" if limits.context_window else "context window unknown"
    slots = f", {limits.slots} slot(s) on its server" if limits.slots else ""
    return f"{model} is in no rules table: no price (cost n/a), {window}{slots}"
