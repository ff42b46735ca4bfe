"""llama-server's command line, environment and counters (the parts of `localmodel.server` that are pure)."""

from __future__ import annotations

import json
from pathlib import Path

from localmodel.server import HOST, ServerOptions, free_port, parse_metrics, server_env, token_totals

DATA = Path(__file__).resolve().parents[1] / "data" / "llama"


def options(**fields: object) -> ServerOptions:
    base: dict[str, object] = {"binary": Path("/opt/llama-server"), "model": Path("/m/x.gguf"), "alias": "x"}
    base["port"] = 4321
    return ServerOptions(**{**base, **fields})  # type: ignore[arg-type]


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_the_server_listens_on_loopback_with_one_slot_and_its_counters() -> None:
    args = options(context=8192, threads=2).arguments()
    assert args[0] == "/opt/llama-server"
    assert flag(args, "--host") == HOST == "127.0.0.1"
    assert flag(args, "--port") == "4321"
    assert flag(args, "--ctx-size") == "8192"
    assert flag(args, "--parallel") == "1"
    assert flag(args, "--threads") == "2"  # as asked
    assert flag(args, "--alias") == "x"
    assert {"--jinja", "--metrics", "--no-webui"} <= set(args)
    assert "--chat-template-file" not in args


def test_a_chat_template_file_is_passed_when_given() -> None:
    args = options(chat_template=Path("/t/tools.jinja"), extra=("--verbose",)).arguments()
    assert flag(args, "--chat-template-file") == "/t/tools.jinja"
    assert args[-1] == "--verbose"


def test_a_developers_llama_variables_do_not_reach_the_server() -> None:
    env = server_env({"PATH": "/bin", "LLAMA_ARG_CTX_SIZE": "128", "HF_TOKEN": "hf_x", "LLAMA_CACHE": "/c"})
    assert env == {"PATH": "/bin"}


def test_a_free_port_is_bindable() -> None:
    port = free_port()
    assert 1024 <= port <= 65535


def test_token_totals_add_cached_to_processed_prompt_tokens() -> None:
    recorded = json.loads((DATA / "metrics.json").read_text(encoding="utf-8"))
    before, after = parse_metrics(recorded["before"]), parse_metrics(recorded["after"])
    assert after["prompt_tokens_total"] > before["prompt_tokens_total"]
    totals = token_totals(before, after)
    processed = after["prompt_tokens_total"] - before["prompt_tokens_total"]
    cached = after["prompt_tokens_cached_total"] - before["prompt_tokens_cached_total"]
    assert totals["prompt_tokens"] == processed + cached
    assert totals["cached_tokens"] == cached
    assert totals["completion_tokens"] == after["tokens_predicted_total"] - before["tokens_predicted_total"] > 0
