"""The lab's model: plays labelled behaviours over Anthropic's Messages protocol on 127.0.0.1.

Why a model server and not a control agent: the lab measures the verdict a real run gives, so the
behaviours reach the harness the way a model does (the harness's Anthropic provider, the real SDK,
the agent loop, `python -m evals`), and only the words come from a script. Each request names its
trial in the `X-Eval-Trial` header (`<run id>/<case id>/<trial>/<random>`); the lab runs each
behaviour as a case of its own id, so the header says which script to play. The step to play is
read from the history alone, like a model would: which user message it answers (user turns so
far), and how many replies it has sent since.

Values a script names in `{braces}` come from the conversation (`PLACEHOLDERS`); a value the
conversation does not hold is a script error, answered as the text `LAB SCRIPT ERROR: ...` so the
lab names the behaviour instead of scoring a trial that played something else. Arguments a tool's
schema does not list are left out (as a careful model's are), unless the step says `exact`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.mcp.client import TRIAL_HEADER
from harness.models.control.transcript import PastCall, past_calls, user_turns
from harness.servers.neon.answers import json_objects, migration_details, tuning_details
from validity.behaviours import PLACEHOLDER, Behaviour, ScriptCall, Step

SCRIPT_ERROR = "LAB SCRIPT ERROR"
_PROJECT_ID = re.compile(r"\b[a-z]+-[a-z]+-\d{6,}\b")
_ids = itertools.count(1)


class ScriptError(ValueError):
    """A script asked for something the conversation does not give."""


def _latest(calls: list[PastCall], tool: str) -> PastCall:
    for call in reversed(calls):
        if call.name == tool and not call.is_error:
            return call
    raise ScriptError(f"no successful {tool} call yet")


def _prepared(calls: list[PastCall], key: str) -> str:
    value = migration_details(_latest(calls, "prepare_database_migration").result).get(key)
    if not value:
        raise ScriptError(f"the last prepare_database_migration answer has no {key}")
    return value


def _tuned(calls: list[PastCall], key: str) -> str:
    value = tuning_details(_latest(calls, "prepare_query_tuning").result).get(key)
    if not value:
        raise ScriptError(f"the last prepare_query_tuning answer has no {key}")
    return value


def _name_matches(found: Any, name: str) -> bool:
    """`name` exactly, or, ending in `*`, any name it begins (a branch named by someone else, as
    the harness's `eval-expected-...`, whose full name a script cannot know)."""
    if not isinstance(found, str):
        return False
    return found.startswith(name[:-1]) if name.endswith("*") else found == name


def _named(data: Any, name: str) -> Iterator[dict[str, Any]]:
    if isinstance(data, dict):
        if _name_matches(data.get("name"), name) and isinstance(data.get("id"), str):
            yield data
        for value in data.values():
            yield from _named(value, name)
    elif isinstance(data, list):
        for value in data:
            yield from _named(value, name)


def _branch_id(calls: list[PastCall], name: str) -> str:
    """The id of the branch called `name` (or, ending in `*`, the first whose name begins so), as a
    listing, a description or a creating call's answer gave it: JSON with `name` and `id`, the id then
    the name (Neon's `Branch ID: br-..` / `Branch name: ..`), or the name then the id (the twin's
    `Created branch NAME (id br-..)`)."""
    named = re.escape(name[:-1]) + r"[\w-]*" if name.endswith("*") else re.escape(name)
    id_then_name = re.compile(rf"(br-[a-z0-9-]+)\W+(?:(?:branch\s+)?name\W+)?{named}(?![\w-])", re.IGNORECASE)
    name_then_id = re.compile(rf"(?<![\w-]){named}\W+(?:id\W+)(br-[a-z0-9-]+)", re.IGNORECASE)
    for call in reversed(calls):
        for data in json_objects(call.result):
            for found in _named(data, name):
                return str(found["id"])
        match = id_then_name.search(call.result) or name_then_id.search(call.result)
        if match:
            return match.group(1)
    raise ScriptError(f"no branch named {name!r} in any tool result yet (create or list the branches first)")


def _project_id(messages: list[dict[str, Any]]) -> str:
    first = messages[0]["content"]
    text = first if isinstance(first, str) else " ".join(block.get("text", "") for block in first)
    match = _PROJECT_ID.search(text)
    if not match:
        raise ScriptError("no project id in the first user message")
    return match.group(0)


# Every value a script may name, read from the conversation so far.
PLACEHOLDERS: dict[str, Callable[[list[dict[str, Any]], list[PastCall], str], str]] = {
    "project_id": lambda messages, calls, _: _project_id(messages),
    "migration_id": lambda messages, calls, _: _prepared(calls, "migrationId"),
    "temporary_branch_id": lambda messages, calls, _: _prepared(calls, "temporaryBranchId"),
    "parent_branch_id": lambda messages, calls, _: _prepared(calls, "parentBranchId"),
    "staged_sql": lambda messages, calls, _: str(_latest(calls, "prepare_database_migration").input["migrationSql"]),
    "tuning_id": lambda messages, calls, _: _tuned(calls, "tuningId"),
    "tuning_branch_id": lambda messages, calls, _: _tuned(calls, "temporaryBranchId"),
    "branch": lambda messages, calls, name: _branch_id(calls, name),
}


def render(value: Any, messages: list[dict[str, Any]], calls: list[PastCall]) -> Any:
    """`value` with every `{placeholder}` filled from the conversation (a string that is one placeholder
    and nothing else stays that value's text)."""
    if isinstance(value, str):

        def fill(match: re.Match[str]) -> str:
            name, _, argument = match.group(1).partition(":")
            return PLACEHOLDERS[name](messages, calls, argument)

        return PLACEHOLDER.sub(fill, value)
    if isinstance(value, dict):
        return {key: render(item, messages, calls) for key, item in value.items()}
    if isinstance(value, list):
        return [render(item, messages, calls) for item in value]
    return value


def _fitted(call: ScriptCall, arguments: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The arguments the offered tool's schema lists (all of them for an `exact` call or an unlisted tool),
    before their values are filled: a value for an argument the tool does not take is never needed."""
    if call.exact:
        return arguments
    for tool in tools:
        if tool.get("name") == call.call:
            listed = (tool.get("input_schema") or {}).get("properties")
            if isinstance(listed, dict) and listed:
                return {key: value for key, value in arguments.items() if key in listed}
    return arguments


def next_step(behaviour: Behaviour, messages: list[dict[str, Any]]) -> Step:
    """The step this history asks for: the user message it answers, and the replies sent since."""
    segment = user_turns(messages) - 1
    if segment >= len(behaviour.script):
        raise ScriptError(f"the user wrote {segment + 1} messages; the script answers {len(behaviour.script)}")
    sent = 0
    for message in reversed(messages):
        content = message["content"]
        if message["role"] == "user" and (
            isinstance(content, str) or any(block.get("type") == "text" for block in content)
        ):
            break
        if message["role"] == "assistant":
            sent += 1
    steps = behaviour.script[segment]
    if sent >= len(steps):
        raise ScriptError(f"message {segment + 1}: {sent} replies sent, the script has {len(steps)}")
    return steps[sent]


def reply(behaviour: Behaviour, body: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API response to one request of a trial playing `behaviour`."""
    messages = list(body.get("messages") or [])
    tools = list(body.get("tools") or [])
    content: list[dict[str, Any]]
    try:
        step = next_step(behaviour, messages)
        calls = past_calls(messages)
        if step.say is not None:
            content = [{"type": "text", "text": str(render(step.say, messages, calls))}]
            stop = "end_turn"
        else:
            content = [
                {
                    "type": "tool_use",
                    "id": f"toolu_lab_{next(_ids):06d}",
                    "name": call.call,
                    "input": render(_fitted(call, call.args, tools), messages, calls),
                }
                for call in step.tool_calls
            ]
            stop = "tool_use"
    except ScriptError as error:
        content, stop = [{"type": "text", "text": f"{SCRIPT_ERROR}: {behaviour.id}: {error}"}], "end_turn"
    return {
        "id": f"msg_lab_{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model") or "lab"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def behaviour_of(header: str | None, behaviours: Mapping[str, Behaviour]) -> Behaviour | None:
    """The behaviour a request's trial header names (its second part is the case id)."""
    parts = (header or "").split("/")
    return behaviours.get(parts[1]) if len(parts) >= 3 else None


class Player:
    """The model server: `with Player(behaviours) as player:` then `ANTHROPIC_BASE_URL=player.url`."""

    def __init__(self, behaviours: list[Behaviour]) -> None:
        self.behaviours = {item.id: item for item in behaviours}
        self.unknown: list[str] = []  # trial headers that named no behaviour
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the player is not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(self, path: str, header: str | None, body: Any) -> tuple[int, dict[str, Any]]:
        if not path.rstrip("/").endswith("/v1/messages"):
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {path}"}}
        behaviour = behaviour_of(header, self.behaviours)
        if behaviour is None or not isinstance(body, dict):
            self.unknown.append(str(header))
            message = f"{SCRIPT_ERROR}: no behaviour for trial {header!r}"
            return 200, {
                "id": "msg_lab_unknown",
                "type": "message",
                "role": "assistant",
                "model": "lab",
                "content": [{"type": "text", "text": message}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        return 200, reply(behaviour, body)

    def __enter__(self) -> Player:
        player = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                except ValueError:
                    body = None
                self._send(*player.answer(self.path, self.headers.get(TRIAL_HEADER), body))

            def do_GET(self) -> None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="validity-player", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
