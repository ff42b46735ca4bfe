"""How the judge's forced function call is asked for: autoevals' form, or one a server honours.

autoevals' classifier forces its `select_choice` function with an object `tool_choice`
(`{"type": "function", "function": {"name": "select_choice"}}`). Some OpenAI-compatible servers
do not read that form: llama.cpp's `llama-server` takes `tool_choice` only as a string, logs "Wrong
type supplied for parameter 'tool_choice', using default value" and answers as `auto`
(tools/server/server-common.cpp). EVAL_JUDGE_TOOL_CHOICE says how the judge's requests ask instead:

- `function` (the default): as autoevals sends it.
- `required`: `tool_choice: "required"` with only the named function offered, the same demand in
  the string form. llama-server honours it, but its grammar lets the model write free text before
  the first `<tool_call>` (common/chat-auto-parser-generator.cpp), so a model that never opens one
  answers in prose until `max_tokens`.
- `json_schema`: the named function's parameters as `response_format: {"type": "json_schema"}`
  (structured output), no tools, each free-text argument capped at MAX_TEXT_CHARS; the server's
  reply, a JSON object, is handed to the SDK as a call of that function. llama-server turns the
  schema into a grammar that holds from the first token.

Only a request whose `tool_choice` names one function is changed, and only its reply in
`json_schema` mode; a reply that is not a JSON object stays as it came (no call: the judge's
error, or the preflight's refusal, says so). The rewrite happens in the HTTP transport of the
judge's openai client: the real SDK talks to the real server, and what was sent is what the server
saw. The server is never guessed from its URL: the preflight tells a route that ignores the object
form to set this variable.
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast

import httpx2

VARIABLE = "EVAL_JUDGE_TOOL_CHOICE"
Mode = Literal["function", "required", "json_schema"]
MODES: tuple[Mode, ...] = ("function", "required", "json_schema")
DEFAULT_MODE: Mode = "function"
CHAT_PATH = "/chat/completions"
MAX_TEXT_CHARS = 1000  # a free-text argument in json_schema mode (the judge's `reasons`): ~250 tokens
_STALE_HEADERS = ("content-length", "content-encoding", "transfer-encoding")


class ToolChoiceModeError(ValueError):
    """EVAL_JUDGE_TOOL_CHOICE names no known mode."""


def parse_mode(value: str | None) -> Mode:
    """The mode a setting names (empty: the default); anything else is refused, naming what is allowed."""
    chosen = (value or "").strip().lower() or DEFAULT_MODE
    if chosen not in MODES:
        raise ToolChoiceModeError(f"{VARIABLE}: {value!r} is not one of {', '.join(MODES)}")
    return cast(Mode, chosen)


def forced_function(body: dict[str, Any]) -> dict[str, Any] | None:
    """The offered function an object `tool_choice` forces, or None when the request forces none."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return None
    name = (choice.get("function") or {}).get("name")
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            return function
    return None


def rewrite_request(body: dict[str, Any], mode: Mode) -> dict[str, Any]:
    """The request body `mode` sends for `body` (unchanged when it forces no offered function)."""
    function = forced_function(body)
    if mode == "function" or function is None or body.get("stream"):
        return body
    if mode == "required":
        offered = [tool for tool in body["tools"] if (tool.get("function") or {}).get("name") == function["name"]]
        return {**body, "tools": offered, "tool_choice": "required"}
    rest = {key: value for key, value in body.items() if key not in ("tools", "tool_choice", "parallel_tool_calls")}
    schema = bounded(function.get("parameters") or {"type": "object"})
    return {
        **rest,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": function["name"], "schema": schema, "strict": True},
        },
    }


def bounded(schema: dict[str, Any], limit: int = MAX_TEXT_CHARS) -> dict[str, Any]:
    """`schema` with a `maxLength` on each free-text property that has none, so a looping model still ends.

    Measured: SmolLM2-135M held to autoevals' schema repeats one sentence in `reasons` until
    `max_tokens`, and the cut reply holds no call; with the bound the grammar closes the string and
    the model must give its `choice`.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    limited = {
        name: {**spec, "maxLength": limit}
        if isinstance(spec, dict) and spec.get("type") == "string" and "enum" not in spec and "maxLength" not in spec
        else spec
        for name, spec in properties.items()
    }
    return {**schema, "properties": limited}


def _json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a structured-output reply holds (llama-server's grammar allows a ```json fence)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        parsed = json.loads(stripped)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def as_function_call(reply: dict[str, Any], name: str) -> dict[str, Any]:
    """A structured-output chat completion as the call of `name` it answers (unchanged when not JSON)."""
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return reply
    message = choices[0].get("message") or {}
    arguments = _json_object(str(message.get("content") or ""))
    if arguments is None:
        return reply
    call = {
        "id": f"call_{reply.get('id') or 0}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    first = {**choices[0], "message": {**message, "content": None, "tool_calls": [call]}, "finish_reason": "tool_calls"}
    return {**reply, "choices": [first, *choices[1:]]}


def _fresh_headers(headers: httpx2.Headers) -> list[tuple[str, str]]:
    """Headers without the framing of a body that is about to be replaced."""
    return [(key, value) for key, value in headers.items() if key.lower() not in _STALE_HEADERS]


class ToolChoiceTransport(httpx2.AsyncBaseTransport):
    """Sends each chat completion as `mode` asks for it; in `json_schema` mode reads the reply back as the call."""

    def __init__(self, mode: Mode, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.mode = mode
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body: Any = None
        if request.method == "POST" and request.url.path.endswith(CHAT_PATH):
            try:
                body = json.loads(await request.aread())
            except ValueError:
                body = None
        sent = rewrite_request(body, self.mode) if isinstance(body, dict) else body
        if sent is body:
            return await self.inner.handle_async_request(request)
        content = json.dumps(sent).encode()
        rewritten = httpx2.Request(
            request.method,
            request.url,
            headers=_fresh_headers(request.headers),
            content=content,
            extensions=request.extensions,
        )
        response = await self.inner.handle_async_request(rewritten)
        function = forced_function(body)
        if self.mode != "json_schema" or function is None or response.status_code != 200:
            return response
        return await self._as_call(response, request, function["name"])

    @staticmethod
    async def _as_call(response: httpx2.Response, request: httpx2.Request, name: str) -> httpx2.Response:
        """The structured-output reply, re-served as the call of `name` (as it came when it is not JSON)."""
        raw = await response.aread()
        await response.aclose()
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = None
        content = json.dumps(as_function_call(reply, name)).encode() if isinstance(reply, dict) else raw
        return httpx2.Response(
            response.status_code,
            headers=_fresh_headers(response.headers),
            content=content,
            request=request,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
