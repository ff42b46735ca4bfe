"""Tool calls a model wrote as text that its server did not parse into calls.

Why: a small open-weights model behind llama.cpp's `llama-server` often writes its call as a fenced
```json {"name": ..., "arguments": ...} block, or between its template's `<tool_call>` markers,
and the server hands that back as the reply's text when its chat template does not name that form.
Taken as the final answer, such a trial would end `ok` with JSON as the answer. The agent loop asks
this module whether a reply that made no call is really a call in disguise, and ends the trial with
the outcome `tool_call_as_text` when it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_FENCED = re.compile(r"```[ \t]*(?:json|JSON|tool_call|tool_code)?[ \t]*\n(.*?)```", re.DOTALL)
_MARKED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_ARGUMENT_KEYS = ("arguments", "parameters", "input")


@dataclass(frozen=True)
class TextCall:
    """One call found in a reply's text: the tool it names, its arguments and how it was written."""

    name: str
    arguments: Any
    form: str  # "fenced json", "<tool_call> markers" or "bare json"


def _objects(text: str) -> list[Any]:
    """The JSON value of `text`, as a list of objects (one object, or each object of a list)."""
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [item for item in (value if isinstance(value, list) else [value]) if isinstance(item, dict)]


def _call(candidate: dict[str, Any], form: str, offered: set[str]) -> TextCall | None:
    """`candidate` as a call when it is shaped like one: a string name and an arguments field.

    A name the model was offered is enough; any other name needs the exact {name, arguments} shape,
    so an answer that shows a JSON record with a `name` field is not taken for a call."""
    name = candidate.get("name")
    function = candidate.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):  # the OpenAI wire shape
        candidate, name = function, function["name"]
    if not isinstance(name, str) or not name:
        return None
    key = next((key for key in _ARGUMENT_KEYS if key in candidate), None)
    if key is None:
        return None
    if name not in offered and set(candidate) - {"name", key}:
        return None
    return TextCall(name, candidate[key], form)


def _found(chunks: Iterable[str], form: str, offered: set[str]) -> list[TextCall]:
    return [call for chunk in chunks for item in _objects(chunk.strip()) if (call := _call(item, form, offered))]


def text_tool_calls(text: str, offered: Iterable[str] = ()) -> list[TextCall]:
    """The tool calls written in `text` (empty when it reads as an answer)."""
    names = set(offered)
    if "<tool_call>" in text:
        calls = _found(_MARKED.findall(text), "<tool_call> markers", names)
        if calls:
            return calls
    calls = _found(_FENCED.findall(text), "fenced json", names)
    if calls:
        return calls
    stripped = text.strip()
    return _found([stripped], "bare json", names) if stripped.startswith(("{", "[")) else []


def describe(calls: list[TextCall], offered: Iterable[str]) -> str:
    """The record's reason for `tool_call_as_text`, naming the tools and whether they exist."""
    names = set(offered)
    named = ", ".join(call.name if call.name in names else f"{call.name} (not offered)" for call in calls)
    return (
        f"the model wrote {len(calls)} tool call(s) as text ({calls[0].form}: {named}); the server returned "
        "them as the reply's text, not as tool calls (its chat template does not parse that form)"
    )
