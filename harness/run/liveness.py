"""Who owns what, so the janitor can tell a killed run's leftovers from a live run's sandboxes.

Why: a run killed with SIGKILL cleans up nothing. Its projects are young (an age threshold alone
would spare them for an hour), and the local server it started lives on in its own session. Each
run and each local server writes a small entry naming its owner process under
`.localneon/owners/<cluster>/`; the entry is removed when the run or server ends normally. An entry
whose owner process is gone marks leftovers the janitor may remove at once, whatever their age.
Entries are kept per PostgreSQL data directory (`LOCALNEON_PGDATA`): a janitor sweeping one cluster
must not forget a killed run whose sandboxes live in another. A run the suite recorded with no live
entry anywhere has ended, however: whatever it left (its cluster was stopped under it, its cleanup
failed) is nobody's, and the janitor need not wait for it to age.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import environment

REPO_ROOT = Path(__file__).resolve().parents[2]
OWNERS_DIR = REPO_ROOT / ".localneon" / "owners"
DEFAULT_PGDATA = environment.DEFAULT_PGDATA  # the local server's default (localneon.pg)


@dataclass(frozen=True)
class Entry:
    """One registered run or server: what it is, and the process that owns it."""

    path: Path
    kind: str  # "run" | "server"
    owner: int
    run_id: str = ""
    pid: int = 0  # the server's own pid
    workdir: str = ""

    @property
    def owner_alive(self) -> bool:
        return pid_alive(self.owner)


def pgdata_dir() -> Path:
    """The data directory of the local server this process starts (`LOCALNEON_PGDATA` or its default)."""
    return environment.host().pgdata_dir


def owners_dir() -> Path:
    """The entries of the cluster this process works on, named after its data directory."""
    pgdata = pgdata_dir()
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:10]
    return OWNERS_DIR / f"{pgdata.name}-{digest}"


def pid_alive(pid: int) -> bool:
    """True while `pid` exists (a zombie counts as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _write(name: str, data: dict[str, Any]) -> Path | None:
    folder = owners_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        return None  # bookkeeping only: a run must not fail because it cannot be registered
    return path


_RUNS: set[str] = set()


def register_run(run_id: str) -> None:
    """Record that this process runs `run_id` (once per process; removed at exit)."""
    if run_id in _RUNS:
        return
    _RUNS.add(run_id)
    path = _write(f"run-{run_id}-{os.getpid()}.json", {"kind": "run", "owner": os.getpid(), "run_id": run_id})
    if path is not None:
        atexit.register(lambda: path.unlink(missing_ok=True))


def register_server(pid: int, workdir: Path) -> None:
    """Record a local server this process started, with its temp folder."""
    _write(f"server-{pid}.json", {"kind": "server", "owner": os.getpid(), "pid": pid, "workdir": str(workdir)})


def unregister_server(pid: int) -> None:
    (owners_dir() / f"server-{pid}.json").unlink(missing_ok=True)


def entries() -> list[Entry]:
    """Every registered run and server (unreadable entries are skipped)."""
    found: list[Entry] = []
    for path in sorted(owners_dir().glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            found.append(
                Entry(
                    path,
                    str(data["kind"]),
                    int(data["owner"]),
                    str(data.get("run_id", "")),
                    int(data.get("pid", 0)),
                    str(data.get("workdir", "")),
                )
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def live_run_ids() -> set[str]:
    """Run ids a live process is running, under any cluster's entries (a janitor sweeping one cluster
    must not take a live run registered under another for finished)."""
    live: set[str] = set()
    for path in OWNERS_DIR.glob("*/run-*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if pid_alive(int(data["owner"])):
                live.add(str(data["run_id"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return live


def dead_runs() -> list[Entry]:
    """Runs whose process is gone without removing its entry: killed, so their sandboxes remain."""
    return [entry for entry in entries() if entry.kind == "run" and not entry.owner_alive]


def orphan_servers() -> list[Entry]:
    """Local servers whose owner is gone (running or not: their temp folder may remain)."""
    return [entry for entry in entries() if entry.kind == "server" and not entry.owner_alive]


def _is_that_server(entry: Entry) -> bool:
    """The pid still runs the registered server (its command line names the server's temp folder)."""
    if not pid_alive(entry.pid):
        return False
    try:
        command = Path(f"/proc/{entry.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        result = subprocess.run(["ps", "-o", "command=", "-p", str(entry.pid)], capture_output=True, text=True)
        command = result.stdout
    return bool(entry.workdir) and entry.workdir in command and "localneon" in command


def stop_orphan(entry: Entry, timeout: float = 10.0) -> bool:
    """Stop an orphaned server (SIGTERM, then SIGKILL) and remove its temp folder and entry.

    Returns True when a running server was stopped."""
    stopped = False
    if _is_that_server(entry):
        with contextlib.suppress(ProcessLookupError):
            os.kill(entry.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(entry.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_alive(entry.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(entry.pid, signal.SIGKILL)
        stopped = True
    forget(entry)
    return stopped


def forget(entry: Entry) -> None:
    """Remove an entry (and a server's temp folder) once its leftovers are dealt with."""
    if entry.workdir and Path(entry.workdir).name.startswith("localneon-run-"):
        shutil.rmtree(entry.workdir, ignore_errors=True)
    entry.path.unlink(missing_ok=True)
