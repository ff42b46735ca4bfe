"""Start and stop the local Neon-compatible server (`python -m localneon`) as a subprocess.

Why a plain `subprocess.Popen` and not an asyncio subprocess: the process must outlive any one
event loop (`Eval()` outside the CLI runs a loop per call) and be stoppable from `atexit`. It
listens on a free port and writes its URLs to a ready file; its stderr goes to a file so a failed
start can show why. Each server is registered with the process that owns it (`harness.run.liveness`),
so the janitor can stop a server whose owner was killed.

The server holds a lease on the embedded PostgreSQL it opens (`localneon.pg`); a server stopped with
SIGTERM exits without releasing it, so `stop()` releases it on the server's behalf, through
`python -m localneon.pg release`: the cluster stops when no other live process uses it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness.config import scrub
from harness.run.liveness import register_server, unregister_server

REPO_ROOT = Path(__file__).resolve().parents[2]
# The server's stderr lines that explain a slow start (`localneon.pg`'s first start of the cluster):
# shown on the run's console while it waits, since its stderr otherwise goes to a file.
PROGRESS_PREFIX = "localneon: first start:"


class ServerStartError(RuntimeError):
    """The local server did not become ready; carries the tail of its stderr."""


@dataclass(frozen=True)
class ServerEndpoints:
    """Where a running server answers."""

    url: str
    mcp_url: str
    api_url: str
    pid: int | None = None


class LocalServer:
    """One `python -m localneon --transport http` subprocess."""

    def __init__(
        self,
        *,
        token: str | None = None,
        descriptions: Path | None = None,
        flat_params: bool = False,
        env: dict[str, str] | None = None,
        python: str = sys.executable,
        startup_timeout: float = 120.0,
    ) -> None:
        self.token = token
        self.descriptions = descriptions
        self.flat_params = flat_params
        self.env = env
        self.python = python
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.endpoints: ServerEndpoints | None = None
        self._workdir = Path(tempfile.mkdtemp(prefix="localneon-run-"))
        self._stderr_path = self._workdir / "stderr.log"
        self._ready_path = self._workdir / "ready.json"

    def command(self) -> list[str]:
        # Every value joined to its option (--ready-file=VALUE). The token is not an option: a command
        # line is readable by every user of the machine (`ps`), so it goes in LOCALNEON_TOKEN (`environment`).
        args = [self.python, "-m", "localneon", "--transport=http", "--host=127.0.0.1", "--port=0"]
        args.append(f"--ready-file={self._ready_path}")
        args.append("--watch-parent")  # a run killed with -9 must not leave its server behind
        if self.descriptions:
            args.append(f"--descriptions={self.descriptions}")
        if self.flat_params:
            args.append("--flat-params")
        return args

    def environment(self) -> dict[str, str]:
        """The server's environment: ours, the caller's additions, and the token (only here, never in argv)."""
        env = {**os.environ, **(self.env or {})}
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.pop("LOCALNEON_TOKEN", None)  # a token of the caller's shell must not replace this server's
        if self.token:
            env["LOCALNEON_TOKEN"] = self.token
        return env

    def stderr_tail(self, lines: int = 40) -> str:
        try:
            text = self._stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return scrub("\n".join(text.splitlines()[-lines:]), [self.token] if self.token else [])

    def _relay_progress(self, done: int) -> int:
        """Show the server's progress lines that explain a long start (its first start creates the
        embedded PostgreSQL cluster) on our stderr; returns how many of its lines were looked at."""
        try:
            lines = self._stderr_path.read_text(encoding="utf-8", errors="replace").split("\n")[:-1]
        except OSError:
            return done
        for line in lines[done:]:
            if line.startswith(PROGRESS_PREFIX):
                print(scrub(line, [self.token] if self.token else []), file=sys.stderr, flush=True)
        return len(lines)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _spawn(self) -> None:
        self._workdir.mkdir(parents=True, exist_ok=True)  # stop() removed it; a restart needs it again
        self._ready_path.unlink(missing_ok=True)  # a stale file from an earlier start must not be trusted
        env = self.environment()
        with self._stderr_path.open("wb") as stderr:
            # Its own session: a Ctrl-C in the terminal reaches the harness, which then deletes its
            # sandboxes through this server before stopping it; the server must outlive that cleanup.
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                cwd=str(REPO_ROOT),
                env=env,
                start_new_session=True,
            )
        register_server(self.process.pid, self._workdir)
        atexit.register(self.stop)

    def _release_cluster(self, pid: int) -> KeyboardInterrupt | None:
        """Drop the stopped server's lease on the embedded cluster; stop the cluster if it was the last user.

        It runs in its own session and is waited for to the end, a Ctrl-C meanwhile returned (for
        `stop` to raise once done): cut short, it would leave the cluster running."""
        env = {**os.environ, **(self.env or {})}
        if env.get("DATABASE_URL"):
            return None  # a cluster of the user's own: not ours to stop
        release = [self.python, "-m", "localneon.pg", "release", f"--pid={pid}"]
        try:
            process = subprocess.Popen(
                release,
                cwd=str(REPO_ROOT),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError:
            return None
        interrupted: KeyboardInterrupt | None = None
        while True:
            try:
                _, said = process.communicate(timeout=120)
                break
            except KeyboardInterrupt as again:
                interrupted = again
            except subprocess.TimeoutExpired:
                process.kill()
                _, said = process.communicate()
                said = f"no answer within 120 s. {said}"
                break
        if process.returncode != 0:  # a cluster left running must not go unsaid
            print(f"harness: could not release the local PostgreSQL: {said.strip()[-500:]}", file=sys.stderr)
        return interrupted

    def _check_ready(self) -> ServerEndpoints | None:
        if self.process is not None and self.process.poll() is not None:
            raise ServerStartError(
                f"localneon exited with code {self.process.returncode} before it was ready:\n{self.stderr_tail()}"
            )
        try:
            data = json.loads(self._ready_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return ServerEndpoints(data["url"], data["mcp_url"], data["api_url"], data.get("pid"))

    async def start(self) -> ServerEndpoints:
        """Spawn the server and wait (without blocking the loop) until its ready file appears."""
        if self.endpoints is not None and self.alive:
            return self.endpoints
        if not self.alive:
            self.endpoints = None  # while it restarts, nobody may take the old address for current
            self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        relayed = 0
        while True:
            relayed = self._relay_progress(relayed)
            endpoints = self._check_ready()
            if endpoints is not None:
                self._relay_progress(relayed)
                self.endpoints = endpoints
                return endpoints
            if time.monotonic() > deadline:
                tail = self.stderr_tail()
                self.stop()
                raise ServerStartError(f"localneon not ready after {self.startup_timeout}s:\n{tail}")
            await asyncio.sleep(0.05)

    def start_blocking(self) -> ServerEndpoints:
        """The same, for code without an event loop (the janitor, scripts)."""
        return asyncio.run(self.start())

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate (then kill) the server and remove its temp folder; safe to call twice."""
        process, self.process = self.process, None
        self.endpoints = None
        interrupted: KeyboardInterrupt | None = None
        try:
            if process is not None and process.poll() is None:
                process.terminate()
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        process.wait(max(0.0, deadline - time.monotonic()))
                        break
                    except KeyboardInterrupt as again:  # a second Ctrl-C: stopping takes a moment, finish it
                        interrupted = again
                    except subprocess.TimeoutExpired:
                        process.kill()
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            process.wait(timeout)
                        break
        finally:
            if process is not None:
                unregister_server(process.pid)
                interrupted = self._release_cluster(process.pid) or interrupted
            shutil.rmtree(self._workdir, ignore_errors=True)
        if interrupted is not None:
            raise interrupted
