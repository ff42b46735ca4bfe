"""A scripted model that speaks Anthropic's Messages wire protocol on 127.0.0.1.

The code under test runs the real `anthropic` SDK against it (via `ANTHROPIC_BASE_URL` or
`base_url=`), from this process or any other: only the URL is needed.

A script decides each reply from the request body:
- a callable `(body) -> reply`, or
- a list of replies (or callables), chosen by how many assistant messages the request's history
  already has, so concurrent conversations each follow the list from the start.
A reply is a full message dict, or built with `text()`, `tool_use()`, `reply()`.
`FakeAnthropic(script, failures=[529, 429])` answers the next requests with those errors first
(Anthropic's error bodies, short retry-after headers), so SDK retries can be exercised.

Every request is validated as the real API would (roles alternate, each `tool_use` answered by a
`tool_result` in the next user message, tools have `input_schema`, thinking blocks come back
unchanged...). A violation gets a 400 and is kept in `violations`. The request model's current
rules (`tests/fakes/anthropic_rules.py`) apply too: a setting it refuses (temperature on Sonnet 5.5,
forced tool use, manual thinking) gets Anthropic's 400 and is kept in `refused`; a 5.x model opens
each reply with a signed thinking block; cache-marked prefixes are written, then read.
`assert_clean()` fails the test loudly on either. `GET /_fake/state` returns
`{"requests", "violations", "refused", "thinking_verified", "cache"}` for a process that only has the
URL; `cache` (and `cache_totals()`) sums the input tokens served uncached, written and read.
Ask for a stop with `reply(text("cut"), stop_reason="max_tokens")` or `stop_reason="refusal"`.

    with FakeAnthropic([reply(tool_use("list_projects", {})), reply(text("done"))]) as fake:
        client = AsyncAnthropic(base_url=fake.url, api_key="test")
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.fakes.anthropic_rules import Signer, cache_usage, refusals, shape_reply, thinks, tokens
from tests.fakes.jsonserver import JsonServer, Request, Response

Reply = dict[str, Any]
Step = Reply | Callable[[dict[str, Any]], Reply]
Script = Callable[[dict[str, Any]], Reply] | list[Step]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_ids = itertools.count(1)


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def tool_use(name: str, arguments: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    """A tool_use content block (a fresh id unless given)."""
    return {"type": "tool_use", "id": id or f"toolu_fake_{next(_ids):05d}", "name": name, "input": arguments or {}}


def reply(*blocks: dict[str, Any], stop_reason: str | None = None) -> Reply:
    """A reply with these blocks; the stop reason is `tool_use` when there is one, else `end_turn`."""
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"content": list(blocks), "stop_reason": stop_reason}


# -- helpers for scripts that read the conversation ----------------------------------------------


def first_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def project_id(body: dict[str, Any]) -> str:
    """The Neon-style project id (like `shiny-cell-31842735`) named in the first user message."""
    found = re.findall(r"\b[a-z]+-[a-z]+-\d{6,}\b", first_user_text(body))
    if not found:
        raise AssertionError(f"no project id in the first user message: {first_user_text(body)!r}")
    return str(found[0])


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool_result block in the history, in order, with the tool name added as `name`."""
    names: dict[str, str] = {}
    found: list[dict[str, Any]] = []
    for message in body["messages"]:
        if not isinstance(message["content"], list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            if block.get("type") == "tool_result":
                content = block.get("content")
                result_text = (
                    content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content or [])
                )
                found.append({**block, "name": names.get(block["tool_use_id"], "?"), "text": result_text})
    return found


def last_tool_result(body: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    results = [r for r in tool_results(body) if name is None or r["name"] == name]
    if not results:
        raise AssertionError(f"no tool_result{' for ' + name if name else ''} in the history")
    return results[-1]


def branch_id_after(label: str, result_text: str) -> str:
    """The `br-...` id that follows `label` in a tool result (e.g. 'temporaryBranchId')."""
    match = re.search(re.escape(label) + r"\W{0,6}(br-[A-Za-z0-9-]+)", result_text)
    if not match:
        raise AssertionError(f"no branch id after {label!r} in: {result_text[:300]!r}")
    return match.group(1)


def user_turns(body: dict[str, Any]) -> int:
    """How many user messages carried user text (first input plus follow-ups)."""
    count = 0
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str) or any(b.get("type") == "text" for b in content):
                count += 1
    return count


# -- validation ----------------------------------------------------------------------------------


def validate(body: Any) -> list[str]:
    """What the real API would reject (the parts an agent loop gets wrong)."""
    problems: list[str] = []
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            problems.append(f"missing '{key}'")
    messages = body.get("messages") or []
    if not messages:
        problems.append("messages is empty")
        return problems
    if messages[0].get("role") != "user":
        problems.append("the first message must be from the user")
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"messages[{index}]: bad role {role!r}")
        if index and role == messages[index - 1].get("role"):
            problems.append(f"messages[{index}]: two '{role}' messages in a row")
        content = message.get("content")
        if content in ("", []) or content is None:
            problems.append(f"messages[{index}]: empty content")
        if role == "assistant" and isinstance(content, list):
            uses = [b["id"] for b in content if b.get("type") == "tool_use"]
            if uses:
                following = messages[index + 1] if index + 1 < len(messages) else None
                answered = []
                if following is not None and isinstance(following.get("content"), list):
                    answered = [b.get("tool_use_id") for b in following["content"] if b.get("type") == "tool_result"]
                missing = [u for u in uses if u not in answered]
                if missing:
                    problems.append(
                        f"messages[{index}]: tool_use ids {missing} have no tool_result in the next message"
                    )
        if role == "user" and isinstance(content, list):
            results = [b for b in content if b.get("type") == "tool_result"]
            if results:
                previous = messages[index - 1] if index else {}
                prev_content = previous.get("content")
                asked = {
                    b.get("id")
                    for b in prev_content or []
                    if isinstance(prev_content, list) and b.get("type") == "tool_use"
                }
                for block in results:
                    if block.get("tool_use_id") not in asked:
                        problems.append(f"messages[{index}]: tool_result for unknown id {block.get('tool_use_id')!r}")
                if content and content[0].get("type") != "tool_result":
                    problems.append(f"messages[{index}]: tool_result blocks must come first")
    for tool in body.get("tools") or []:
        if not isinstance(tool.get("name"), str) or not re.fullmatch(r"[a-zA-Z0-9_-]{1,128}", tool["name"]):
            problems.append(f"tool with bad name {tool.get('name')!r}")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"tool {tool.get('name')!r}: input_schema must be an object schema")
    names = [t.get("name") for t in body.get("tools") or []]
    if len(names) != len(set(names)):
        problems.append("duplicate tool names")
    return problems


class FakeAnthropic:
    """A scripted Messages API; start with `with FakeAnthropic(script) as fake:` and use `fake.url`."""

    def __init__(self, script: Script, failures: list[int] | None = None, retry_after_ms: int = 20) -> None:
        self.script = script
        self.failures = list(failures or [])
        self.retry_after_ms = retry_after_ms
        self.bodies: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.refused: list[str] = []  # requests a current model answers 400 (sampling, forced tools...)
        self.errors_served: list[int] = []
        self.usages: list[dict[str, int]] = []  # the usage of every reply served: the cache's own count
        self.signer = Signer()
        self._cached: set[str] = set()
        self._lock = threading.Lock()
        self._server = JsonServer({"POST /v1/messages": self._messages, "GET /_fake/state": self._state})

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> FakeAnthropic:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def assert_clean(self) -> None:
        assert not self.violations, "the fake Anthropic API saw invalid requests:\n" + "\n".join(self.violations)
        assert not self.refused, "the fake Anthropic API refused requests:\n" + "\n".join(self.refused)

    def _state(self, request: Request) -> Response:
        """What another process can check: how many requests came, and every violation seen."""
        with self._lock:
            return Response(
                200,
                {
                    "requests": len(self.bodies),
                    "violations": list(self.violations),
                    "refused": list(self.refused),
                    "thinking_verified": self.signer.verified,
                    "cache": self.cache_totals(),
                },
            )

    def cache_totals(self) -> dict[str, int]:
        """Input tokens served: uncached, written to the cache, read from it (summed over every reply)."""
        keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        return {key: sum(usage.get(key, 0) for usage in self.usages) for key in keys}

    def _error(self, status: int, message: str) -> Response:
        body = {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}
        headers = {"request-id": f"req_fake_{next(_ids)}"}
        if status in (429, 529):
            headers["retry-after-ms"] = str(self.retry_after_ms)
        return Response(status, body, headers)

    def _choose(self, body: dict[str, Any]) -> Reply:
        if callable(self.script):
            return self.script(body)
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if step >= len(self.script):
            raise AssertionError(f"script has {len(self.script)} replies; asked for reply #{step + 1}")
        chosen = self.script[step]
        return chosen(body) if callable(chosen) else chosen

    def _messages(self, request: Request) -> Response:
        body = request.body
        with self._lock:
            self.bodies.append(body)
            if self.failures:
                status = self.failures.pop(0)
                self.errors_served.append(status)
                return self._error(status, "Overloaded" if status == 529 else "scripted failure")
        with self._lock:
            problems = validate(body) or self.signer.problems(body)
            refused = [] if problems else refusals(body)
            self.violations.extend(problems)
            self.refused.extend(refused)
        if problems or refused:
            return self._error(400, "; ".join(problems or refused))
        try:
            chosen = self._choose(body)
        except Exception as error:
            with self._lock:
                self.violations.append(f"script failed: {type(error).__name__}: {error}")
            return self._error(500, f"script failed: {error}")
        model = str(body["model"])
        thinking_on = thinks(model) and (body.get("thinking") or {}).get("type") != "disabled"
        with self._lock:
            content = shape_reply(model, chosen.get("content", []), self.signer, thinking_on)
            uncached, written, read = cache_usage(body, self._cached)
        thinking_tokens = sum(tokens(b["thinking"]) for b in content if b.get("type") == "thinking")
        usage = {
            "input_tokens": uncached,
            "output_tokens": max(1, tokens(content)),
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "output_tokens_details": {"thinking_tokens": thinking_tokens},
        }
        message = {
            "id": chosen.get("id", f"msg_fake_{next(_ids):05d}"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": chosen.get("stop_reason")
            or ("tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"),
            "stop_sequence": None,
            "usage": chosen.get("usage") or usage,
        }
        with self._lock:
            self.usages.append({key: int(value) for key, value in message["usage"].items() if isinstance(value, int)})
        return Response(200, message, {"request-id": f"req_fake_{next(_ids)}"})


def main(argv: list[str] | None = None) -> None:
    """Serve a script from another process: `python -m tests.fakes.anthropic_server pkg.module:SCRIPT`."""
    parser = argparse.ArgumentParser(description="A scripted Anthropic Messages API on 127.0.0.1")
    parser.add_argument("script", help="module:attribute naming a script (callable or list of replies)")
    args = parser.parse_args(argv)
    module, _, attribute = args.script.partition(":")
    script = getattr(importlib.import_module(module), attribute)
    with FakeAnthropic(script) as fake:
        print(fake.url, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
