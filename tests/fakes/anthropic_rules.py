"""How a current Claude model treats a Messages request: the stand-in's copy of Anthropic's rules.

Kept apart from the harness's own table (`harness/models/rules.py`) on purpose: the fake follows
the service's published rules, so a harness that gets them wrong meets the same 400 it would meet
in production. Rules, from Anthropic's model pages (2026-11):
- Sonnet 5 and later, Haiku 5.5, Opus 4.7 and later: `temperature`, `top_p`, `top_k` at a
  non-default value are a 400; manual thinking (`budget_tokens`) is a 400; thinking is adaptive and
  on by default, so replies open with a signed `thinking` block.
- Sonnet 5.5 (and Opus 5.5, whose thinking is always on): forced tool use is a 400; Sonnet 5.5
  returns the text between tool calls inside the thinking block.
- A thinking block must come back unchanged: an altered one fails its signature, and the assistant
  turn that called tools must still start with it.
- Prompt caching: a prefix marked with `cache_control` (tools, then system) of at least 1024
  tokens is written on first sight and read afterwards; usage reports both.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from typing import Any

NO_SAMPLING = re.compile(r"^claude-(sonnet-5|haiku-5|opus-5|opus-4-[78]|fable|mythos)")
NO_FORCED_TOOLS = re.compile(r"^claude-(sonnet-5-5|opus-5-5|fable)")
TEXT_IN_THINKING = re.compile(r"^claude-sonnet-5-5")
SAMPLING_DEFAULTS = {"temperature": 1.0, "top_p": None, "top_k": None}
MIN_CACHEABLE_TOKENS = 1024


def thinks(model: str) -> bool:
    """5.x models think adaptively unless the request turns it off."""
    return bool(NO_SAMPLING.match(model))


def refusals(body: dict[str, Any]) -> list[str]:
    """The 400 messages Anthropic answers for request settings this model does not take."""
    model = str(body.get("model", ""))
    found: list[str] = []
    if NO_SAMPLING.match(model):
        for name, default in SAMPLING_DEFAULTS.items():
            if name in body and body[name] != default:
                found.append(f"`{name}` is deprecated for this model.")
        thinking = body.get("thinking") or {}
        if thinking.get("type") == "enabled":
            found.append(
                "thinking.type.enabled is not supported for this model. "
                "Use thinking.type.adaptive and output_config.effort to control thinking behavior."
            )
    choice = (body.get("tool_choice") or {}).get("type")
    if NO_FORCED_TOOLS.match(model) and choice in ("any", "tool"):
        found.append(f"tool_choice.type '{choice}' is not supported for this model; use 'auto' or 'none'.")
    return found


class Signer:
    """Signs thinking blocks and checks that a history returns them unchanged."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(16)
        self.issued: dict[str, dict[str, Any]] = {}  # tool_use id -> the thinking block issued with it
        self.verified = 0  # thinking blocks that came back intact

    def sign(self, model: str, thinking: str) -> str:
        digest = hmac.new(self._key, json.dumps([model, thinking]).encode(), hashlib.sha256).hexdigest()
        return "Eq" + digest

    def block(self, model: str, thinking: str, tool_ids: list[str]) -> dict[str, Any]:
        block = {"type": "thinking", "thinking": thinking, "signature": self.sign(model, thinking)}
        for tool_id in tool_ids:
            self.issued[tool_id] = block
        return block

    def problems(self, body: dict[str, Any]) -> list[str]:
        """Altered or dropped thinking blocks in the history, worded as the API words them."""
        model = str(body.get("model", ""))
        found: list[str] = []
        for index, message in enumerate(body.get("messages") or []):
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            for position, block in enumerate(content):
                if block.get("type") != "thinking":
                    continue
                if not hmac.compare_digest(str(block.get("signature")), self.sign(model, str(block.get("thinking")))):
                    found.append(f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block")
                else:
                    self.verified += 1
            tool_ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
            issued = [self.issued[i] for i in tool_ids if i in self.issued]
            if issued and (content[0].get("type") != "thinking" or any(block not in content for block in issued)):
                found.append(
                    f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{content[0].get('type')}`. When `thinking` is enabled, an `assistant` message with "
                    "tool_use must start with a thinking block and keep the ones it was returned with."
                )
        return found


def shape_reply(model: str, content: list[dict[str, Any]], signer: Signer, thinking_on: bool) -> list[dict[str, Any]]:
    """The script's reply as this model returns it: a signed thinking block first when it thinks,
    and (Sonnet 5.5) the text between tool calls moved inside that block."""
    if not thinking_on or any(block.get("type") == "thinking" for block in content):
        return content
    tool_ids = [str(b["id"]) for b in content if b.get("type") == "tool_use"]
    texts = [str(b.get("text", "")) for b in content if b.get("type") == "text"]
    thought = "Working out which tool fits the request."
    if tool_ids and TEXT_IN_THINKING.match(model) and texts:
        thought += "\n" + "\n".join(texts)
        content = [b for b in content if b.get("type") != "text"]
    return [signer.block(model, thought, tool_ids), *content]


def tokens(value: Any) -> int:
    return len(json.dumps(value)) // 4


def cache_usage(body: dict[str, Any], seen: set[str]) -> tuple[int, int, int]:
    """(uncached input, cache write, cache read) tokens for this request's prompt."""
    tools, system = body.get("tools") or [], body.get("system")
    total = tokens(body.get("messages")) + tokens(tools) + (tokens(system) if system else 0)
    prefix: list[Any] = []
    cached: list[Any] = []
    for part in [*tools, *(system if isinstance(system, list) else [])]:
        prefix.append(part)
        if isinstance(part, dict) and part.get("cache_control"):
            cached = list(prefix)
    size = tokens(cached) if cached else 0
    if size < MIN_CACHEABLE_TOKENS:
        return total, 0, 0
    key = hashlib.sha256(json.dumps([body.get("model"), cached], sort_keys=True).encode()).hexdigest()
    if key in seen:
        return total - size, 0, size
    seen.add(key)
    return total - size, size, 0
