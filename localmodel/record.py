"""Record real llama-server exchanges as JSON files: the inputs of the harness's provider tests.

    python -m localmodel record OUT_DIR [--tools TOOLS.json]

Starts the pinned server twice (the normal context, then a small `--ctx-size` for the overflow) and
saves, per exchange, `{"made_by", "request": {method, path, body}, "response": {status, body}}`:
tool calls on both protocols, a tool call written as text, a context overflow, a reply cut by
max_tokens, a cached-prefix usage block, /props and /v1/models, and forced `tool_choice` in each
shape. The tool list is the local server's (a `python -m localneon.snapshot` file).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness.cases import REPO_ROOT
from localmodel.pins import MODEL, RUNTIME
from localmodel.server import LocalServer, ServerOptions, free_port, get_text

ASK = "In my proj-123 project, how many posts are there? Use the tools."


def exchange(base: str, method: str, path: str, body: Any | None = None, timeout: float = 600.0) -> dict[str, Any]:
    """One HTTP exchange, recorded whatever its status."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        base + path, data=data, method=method, headers={"Content-Type": "application/json", "x-api-key": "local"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        parsed: Any = json.loads(raw.decode())
    except ValueError:
        parsed = raw.decode(errors="replace")
    return {"request": {"method": method, "path": path, "body": body}, "response": {"status": status, "body": parsed}}


def openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": schema}}
        for t in tools
        if (schema := t.get("input_schema") or t.get("inputSchema"))
    ]


def anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t.get("input_schema") or t["inputSchema"]}
        for t in tools
    ]


def chat(tools: list[dict[str, Any]] | None, content: str = ASK, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL.alias, "messages": [{"role": "user", "content": content}], **extra}
    if tools:
        body["tools"] = openai_tools(tools)
    return body


def messages(tools: list[dict[str, Any]] | None, content: str = ASK, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": MODEL.alias,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": content}],
        **extra,
    }
    if tools:
        body["tools"] = anthropic_tools(tools)
    return body


TEXT_CALL_PROMPT = (
    "You can call the function run_sql(sql, projectId). To call it, reply with only a JSON object "
    '{"name": "run_sql", "arguments": {...}} inside a ```json fence. How many posts are in project proj-123?'
)


def save_recording(out: Path, name: str, record: dict[str, Any], server: ServerOptions, **about: str) -> Path:
    """`out/<name>.json`: the exchange, under `made_by` (runtime, model, the server's command, and `about`)."""
    command = " ".join(server.arguments()).replace(f"{REPO_ROOT}/", "")  # no checkout path in the data
    made_by = {
        "runtime": f"llama-server from {RUNTIME.requirement} (vendored llama.cpp)",
        "model": f"{MODEL.requirement}: {MODEL.file_name}",
        "command": command,
        **about,
    }
    path = out / f"{name}.json"
    path.write_text(json.dumps({"made_by": made_by, **record}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def record_all(options: ServerOptions, small: ServerOptions, tools: list[dict[str, Any]], out: Path) -> list[Path]:
    """Every exchange, each in its own file; returns the files written."""
    few = [t for t in tools if t["name"] in ("run_sql", "get_database_tables", "describe_table_schema")]
    written: list[Path] = []

    def save(name: str, record: dict[str, Any], server: ServerOptions) -> None:
        written.append(save_recording(out, name, record, server))

    out.mkdir(parents=True, exist_ok=True)
    with LocalServer(options, out / "server.log") as server:
        base = server.url
        metrics_before = get_text(f"{base}/metrics")
        save("props", exchange(base, "GET", "/props"), options)
        save("v1_models", exchange(base, "GET", "/v1/models"), options)
        save("openai_tool_call", exchange(base, "POST", "/v1/chat/completions", chat(few, max_tokens=256)), options)
        save(
            "openai_text_tool_call",
            exchange(base, "POST", "/v1/chat/completions", chat(None, TEXT_CALL_PROMPT, max_tokens=128)),
            options,
        )
        # SmolLM2-135M never opens a <tool_call> by itself; llama-server continues a final assistant
        # message, so one that opens a call gets the model's completion parsed (or refused) as one.
        opening = '<tool_call>\n{"name": "get_database_tables", "arguments": {"projectId": "'
        two = [t for t in few if t["name"] in ("run_sql", "get_database_tables")]
        question = "Which tables exist in project proj-123?"
        for name, tools_shown, asked, prefix in (
            ("tool_call_parsed", two, question, opening + 'proj-123"}}\n</tool_call>'),
            ("tool_call_completed", two, question, opening),  # the model writes the argument and closes the call
            ("tool_call_malformed", few, ASK, opening),  # the model's continuation is no valid call: HTTP 500
        ):
            opened = chat(tools_shown, asked, max_tokens=40, temperature=0)
            opened["messages"].append({"role": "assistant", "content": prefix})
            save(f"openai_{name}", exchange(base, "POST", "/v1/chat/completions", opened), options)
            opened_anthropic = messages(tools_shown, asked, max_tokens=40, temperature=0)
            opened_anthropic["messages"].append(opened["messages"][-1])
            save(f"anthropic_{name}", exchange(base, "POST", "/v1/messages", opened_anthropic), options)
        save("openai_length", exchange(base, "POST", "/v1/chat/completions", chat(few, max_tokens=3)), options)
        cached = chat(few, max_tokens=16)
        exchange(base, "POST", "/v1/chat/completions", cached)  # warms the slot's cache with this prefix
        save("openai_cached_tokens", exchange(base, "POST", "/v1/chat/completions", cached), options)
        forced = {"type": "function", "function": {"name": "get_database_tables"}}
        save(
            "openai_tool_choice_object",
            exchange(base, "POST", "/v1/chat/completions", chat(few, tool_choice=forced, max_tokens=128)),
            options,
        )
        save(
            "openai_tool_choice_required",
            exchange(base, "POST", "/v1/chat/completions", chat(few, tool_choice="required", max_tokens=128)),
            options,
        )
        save("anthropic_tool_use", exchange(base, "POST", "/v1/messages", messages(few)), options)
        save(
            "anthropic_text_tool_call",
            exchange(base, "POST", "/v1/messages", messages(None, TEXT_CALL_PROMPT, max_tokens=128)),
            options,
        )
        save("anthropic_max_tokens", exchange(base, "POST", "/v1/messages", messages(few, max_tokens=3)), options)
        warm = messages(few, max_tokens=16)
        exchange(base, "POST", "/v1/messages", warm)
        save("anthropic_cache_read", exchange(base, "POST", "/v1/messages", warm), options)
        save(
            "anthropic_tool_choice_tool",
            exchange(
                base,
                "POST",
                "/v1/messages",
                messages(few, tool_choice={"type": "tool", "name": "get_database_tables"}, max_tokens=128),
            ),
            options,
        )
        save(
            "anthropic_tool_choice_any",
            exchange(base, "POST", "/v1/messages", messages(few, tool_choice={"type": "any"}, max_tokens=128)),
            options,
        )
        save("metrics", {"before": metrics_before, "after": get_text(f"{base}/metrics")}, options)
    with LocalServer(small, out / "server-small.log") as server:
        base = server.url
        save("props_small_context", exchange(base, "GET", "/props"), small)
        save(
            "openai_context_overflow",
            exchange(base, "POST", "/v1/chat/completions", chat(tools, max_tokens=64)),
            small,
        )
        save(
            "anthropic_context_overflow",
            exchange(base, "POST", "/v1/messages", messages(tools, max_tokens=64)),
            small,
        )
    return written


def main(out: Path, tools_file: Path, binary: Path, model: Path, template: Path | None) -> int:
    tools = json.loads(tools_file.read_text(encoding="utf-8"))
    tools = tools.get("tools", tools) if isinstance(tools, dict) else tools
    options = ServerOptions(binary, model, MODEL.alias, free_port(), MODEL.context_window, chat_template=template)
    small = ServerOptions(binary, model, MODEL.alias, free_port(), 2048, chat_template=template)
    for path in record_all(options, small, tools, out):
        print(path)
    return 0
