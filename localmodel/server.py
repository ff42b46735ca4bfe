"""`llama-server` as a child the smoke owns: on 127.0.0.1, a free port, its own process group, always stopped.

Why its own group: the server starts worker threads only, but a Ctrl-C at the terminal goes to the
whole foreground group; in its own session the server is stopped by us, in order, after the evals
that use it have cleaned up. `LocalServer` stops it on every exit of its `with` block (an error, a
KeyboardInterrupt, a SIGTERM turned into one by `localmodel.smoke`), SIGTERM first, SIGKILL after
a grace period, and waits until the group is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

HOST = "127.0.0.1"
# Variables llama-server reads as defaults for its flags (LLAMA_ARG_*), or to fetch models: a developer's
# shell must not change what the smoke runs.
FOREIGN_PREFIXES = ("LLAMA_ARG_", "LLAMA_CACHE", "HF_", "HUGGING_FACE")


class ServerError(RuntimeError):
    """llama-server did not come up; the message has the end of its log."""


class ServerCrashed(ServerError):
    """llama-server was killed by a signal before it was ready (`LocalServer` tries it again)."""

    def __init__(self, signal_number: int, message: str) -> None:
        super().__init__(message)
        self.signal = signal_number

    def first_line(self) -> str:
        return str(self).splitlines()[0].rstrip(":")


class IllegalInstruction(ServerCrashed):
    """llama-server died of SIGILL: the binary asks for an instruction this CPU lacks. Starting it
    again cannot help; a build with fewer instruction sets can (`localmodel.build.BASELINE`)."""


CRASH_RETRIES = 2


@dataclass(frozen=True)
class ServerOptions:
    """How one llama-server runs; `arguments()` is its whole command line."""

    binary: Path
    model: Path
    alias: str
    port: int
    context: int = 8192
    # Measured: on a busy 2-core machine, 2 threads generate 3 tokens/s (their OpenMP barriers wait on
    # each other), 1 thread 30-49 tokens/s; prompt processing is no faster with 2 (50-67 vs 56-93/s).
    threads: int = 1
    slots: int = 1  # one request at a time: what a 2-core CPU serves; the evals queue on it
    chat_template: Path | None = None
    extra: tuple[str, ...] = field(default=())

    def arguments(self) -> list[str]:
        args = [
            str(self.binary),
            "--model",
            str(self.model),
            "--alias",
            self.alias,
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--ctx-size",
            str(self.context),
            "--parallel",
            str(self.slots),
            "--threads",
            str(self.threads),
            "--jinja",
            "--metrics",  # /metrics: the server's own token counters, which the smoke checks records against
            "--no-webui",
        ]
        if self.chat_template is not None:
            args += ["--chat-template-file", str(self.chat_template)]
        return [*args, *self.extra]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


def free_port(host: str = HOST) -> int:
    """A port nothing listens on now (the kernel's choice); the server binds it a moment later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def server_env(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without the variables that would change the server's flags or send it to a model hub."""
    return {key: value for key, value in base.items() if not key.startswith(FOREIGN_PREFIXES)}


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def get_text(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode("utf-8"))


class LocalServer:
    """`with LocalServer(options, log) as server:` a running, healthy llama-server; stopped on exit."""

    def __init__(
        self,
        options: ServerOptions,
        log: Path,
        ready_timeout: float = 120.0,
        grace: float = 10.0,
        crash_retries: int = CRASH_RETRIES,
        say: Callable[[str], None] = print,
    ) -> None:
        self.options = options
        self.log = log
        self.ready_timeout = ready_timeout
        self.grace = grace
        self.crash_retries = crash_retries
        self.say = say
        self.process: subprocess.Popen[bytes] | None = None
        self.crashes: list[int] = []  # the signals that killed earlier starts of this server

    @property
    def url(self) -> str:
        return self.options.url

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until it is healthy.

        A start that a signal kills before it is ready (CI once saw SIGSEGV right after the model
        loaded, on a busy 2-core machine; the same pin starts cleanly here) is tried again, up to
        `crash_retries` times, each crash said and kept in the log. An exit with a status, or a
        server that never gets ready, is no crash: it fails at once."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log.write_bytes(b"")
        while True:
            try:
                self._start_once()
                return
            except IllegalInstruction:
                raise
            except ServerCrashed as crash:
                self.crashes.append(crash.signal)
                if len(self.crashes) > self.crash_retries:
                    raise
                self.say(
                    f"localmodel: {crash.first_line()}; starting it again ({len(self.crashes)} of {self.crash_retries})"
                )

    def _start_once(self) -> None:
        with self.log.open("ab") as out:
            if self.crashes:
                out.write(f"\n--- localmodel: start {len(self.crashes) + 1} after a crash ---\n".encode())
            self.process = subprocess.Popen(
                self.options.arguments(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=server_env(dict(os.environ)),  # the whole environment, for the child, less what misleads it
                start_new_session=True,  # its own process group, out of reach of the terminal's Ctrl-C
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                message = f"llama-server exited with {code}:\n{self.log_tail()}"
                if code == -signal.SIGILL:
                    raise IllegalInstruction(
                        -code, f"llama-server died of SIGILL (an instruction this CPU lacks):\n{self.log_tail()}"
                    )
                raise ServerCrashed(-code, message) if code < 0 else ServerError(message)
            try:
                if get_json(f"{self.url}/health", timeout=2.0).get("status") == "ok":
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass  # loading the model, or not listening yet (/health answers 503 while loading)
            time.sleep(0.25)
        raise ServerError(f"llama-server was not ready after {self.ready_timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM to the group, SIGKILL after the grace period; returns once the server is reaped."""
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # anything left in the group

    def metrics(self) -> dict[str, float]:
        """The server's Prometheus counters (`llamacpp:` prefix dropped)."""
        return parse_metrics(get_text(f"{self.url}/metrics"))


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text as {name: value}, for llama.cpp's `llamacpp:*` series (no labels)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition(" ")
        if name.startswith("llamacpp:"):
            with contextlib.suppress(ValueError):
                values[name.removeprefix("llamacpp:")] = float(value.strip())
    return values


def token_totals(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, int]:
    """Prompt tokens (processed + reused from the cache) and generated tokens between two metric reads."""

    def delta(name: str) -> int:
        return int(after.get(name, 0.0) - before.get(name, 0.0))

    return {
        "prompt_tokens": delta("prompt_tokens_total") + delta("prompt_tokens_cached_total"),
        "cached_tokens": delta("prompt_tokens_cached_total"),
        "completion_tokens": delta("tokens_predicted_total"),
    }


def command_line(args: Sequence[str]) -> str:
    return " ".join(args)
