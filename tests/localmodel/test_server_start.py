"""`LocalServer.start` against a stand-in llama-server (a real process on a real port): a start that a
signal kills is tried again, an exit with a status is not, and repeated crashes stop with the log."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from localmodel.server import IllegalInstruction, LocalServer, ServerCrashed, ServerError, ServerOptions, free_port

# Crashes (SIGSEGV as CI saw, or SIGNAL) on its first `crashes` starts, counted in a file; then answers /health.
STAND_IN = """\
import http.server, os, signal, sys
from pathlib import Path
count = Path(sys.argv[0]).with_suffix(".starts")
starts = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(starts))
print(f"stand-in start {starts}", flush=True)
if starts <= CRASHES:
    os.kill(os.getpid(), signal.SIGNAL)
if EXIT_STATUS:
    sys.exit(EXIT_STATUS)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"status": "ok"}')
    def log_message(self, *args):
        pass
port = int(sys.argv[sys.argv.index("--port") + 1])
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def stand_in(folder: Path, crashes: int, exit_status: int = 0, signal: str = "SIGSEGV") -> Path:
    body = folder / "llama server stand-in.py"
    text = STAND_IN.replace("CRASHES", str(crashes)).replace("EXIT_STATUS", str(exit_status))
    body.write_text(text.replace("SIGNAL", signal), encoding="utf-8")
    # A shell wrapper, not a `#!` line naming the interpreter: Linux splits a shebang at its first
    # space, and a checkout (so its .venv's python) may live under a path with spaces.
    script = folder / "llama server stand-in"
    script.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(body))} "$@"\n', encoding="utf-8"
    )
    script.chmod(0o755)
    return script


def server(folder: Path, script: Path, said: list[str]) -> LocalServer:
    options = ServerOptions(script, folder / "m.gguf", "stand-in", free_port())
    return LocalServer(options, folder / "logs" / "server.log", ready_timeout=30, grace=2, say=said.append)


def starts(script: Path) -> int:
    return int(script.with_suffix(".starts").read_text())


def test_a_start_killed_by_a_signal_is_tried_again_and_the_log_keeps_both(tmp_path: Path) -> None:
    script, said = stand_in(tmp_path, crashes=1), list[str]()
    with server(tmp_path, script, said) as running:
        assert running.process is not None and running.process.poll() is None
        assert running.crashes == [11]
    assert starts(script) == 2
    assert len(said) == 1 and "exited with -11" in said[0] and "1 of 2" in said[0]
    log = (tmp_path / "logs" / "server.log").read_text()
    assert "stand-in start 1" in log and "stand-in start 2" in log and "after a crash" in log


def test_an_exit_with_a_status_is_not_retried(tmp_path: Path) -> None:
    script, said = stand_in(tmp_path, crashes=0, exit_status=3), list[str]()
    with pytest.raises(ServerError) as failed:
        server(tmp_path, script, said).start()
    assert not isinstance(failed.value, ServerCrashed)
    assert "exited with 3" in str(failed.value) and starts(script) == 1 and said == []


def test_crashes_beyond_the_retries_stop_the_start_with_the_log(tmp_path: Path) -> None:
    script, said = stand_in(tmp_path, crashes=5), list[str]()
    with pytest.raises(ServerCrashed) as crashed:
        server(tmp_path, script, said).start()
    assert crashed.value.signal == 11 and starts(script) == 3  # the first start and two retries
    assert "stand-in start 3" in str(crashed.value) and len(said) == 2


def test_an_illegal_instruction_is_not_retried_and_says_what_it_is(tmp_path: Path) -> None:
    """SIGILL is the binary asking for an instruction the CPU lacks (CI once met it): every start would
    die the same way, so it stops at once with a name the smoke acts on (it builds the baseline profile)."""
    script, said = stand_in(tmp_path, crashes=5, signal="SIGILL"), list[str]()
    with pytest.raises(IllegalInstruction) as crashed:
        server(tmp_path, script, said).start()
    assert crashed.value.signal == 4 and starts(script) == 1 and said == []
    assert "SIGILL (an instruction this CPU lacks)" in str(crashed.value) and "stand-in start 1" in str(crashed.value)
