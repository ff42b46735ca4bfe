"""Where the tests' embedded PostgreSQL clusters live: one set per pytest-xdist worker.

`make test` runs the suite in parallel workers. Tests that count databases, roles or orphans in
a cluster must not see another worker's, so each worker (`PYTEST_XDIST_WORKER`, e.g. `gw0`) gets
its own data directories; a plain `pytest` run uses the unsuffixed ones. Each process stops its own
when its tests are done (`tests/conftest.py`), and `make test` stops them all after an interrupted run.

They are folders of `.localneon/`, or of `LOCALNEON_TEST_ROOT` when it is set: `make check` sets it
to this checkout's folder on tmpfs (`python -m tests.pgdirs tmpfs`), where a database clone costs
a fraction of what it costs on a disk (docs/development.md#tests).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
# A relative LOCALNEON_TEST_ROOT is the checkout's (`LOCALNEON_TEST_ROOT=.localneon make check`).
CLUSTERS_ROOT = REPO_ROOT / (os.environ.get("LOCALNEON_TEST_ROOT") or ".localneon")


def cluster_dir(name: str) -> Path:
    """The data directory `name` of this worker (`<root>/<name>` or `<root>/<name>-<worker>`)."""
    return CLUSTERS_ROOT / (f"{name}-{WORKER}" if WORKER else name)


TEST_PGDATA = cluster_dir("test-pgdata")  # localneon servers of harness, eval and analysis tests
SCORER_PGDATA = cluster_dir("scorer-test-pgdata")  # fixtures and dumps for dataset and scorer tests
FAULTS_PGDATA = cluster_dir("faults-pgdata")  # fault runs, whose leftover checks need a quiet cluster

TMPFS = Path("/dev/shm")
# The free space the tmpfs must have: a worker's clusters take 120-250 MB (of memory, until a
# reboot or `make clean`), four workers up to 1 GB; the rest is room for the machine.
TMPFS_ROOM = 2 * 1024**3
# What the code keeps beside a cluster that is not a cluster: the worn-surface cache
# (`harness/servers/neon/worn_surface.py`, `LOCALNEON_PGDATA`'s parent / surfaces). In the tmpfs
# folder it is a link to `.localneon/`'s, so that both lanes wear the snapshot `make eval` and
# `make npm` took, and a reboot does not make the next run take it again.
SHARED_BESIDE = ("surfaces",)


def tmpfs_folder() -> Path:
    """This checkout's folder on tmpfs, whether or not it exists: named after the user and the
    checkout's path, so that two checkouts (or two users) never share a cluster."""
    digest = hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:12]
    return TMPFS / f"localneon-tests-{os.getuid()}-{digest}"


def _is_tmpfs(mount_point: Path) -> bool:
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return any(line.split()[1:3] == [str(mount_point), "tmpfs"] for line in mounts if len(line.split()) > 2)


def usable_tmpfs_root() -> Path | None:
    """`tmpfs_folder()`, created, when /dev/shm is a tmpfs with `TMPFS_ROOM` free and the folder is
    this user's own (a real folder nobody else may write, not a link somebody else planted); else None."""
    if not _is_tmpfs(TMPFS):
        return None
    try:
        room = os.statvfs(TMPFS)
        if room.f_bavail * room.f_frsize < TMPFS_ROOM:
            return None
        root = tmpfs_folder()
        root.mkdir(exist_ok=True)
        info = os.lstat(root)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return None
        os.chmod(root, 0o755)  # as `.localneon/`: the cluster's own system user (when run as root) enters it
        for name in SHARED_BESIDE:
            if not (root / name).is_symlink() and not (root / name).exists():
                (REPO_ROOT / ".localneon" / name).mkdir(parents=True, exist_ok=True)
                (root / name).symlink_to(REPO_ROOT / ".localneon" / name)
    except OSError:
        return None
    return root


def main(argv: list[str]) -> int:
    """`tmpfs`: print the usable tmpfs root (nothing if there is none); `tmpfs-folder`: its name."""
    if argv == ["tmpfs"]:
        root = usable_tmpfs_root()
        if root is not None:
            print(root)
        return 0
    if argv == ["tmpfs-folder"]:
        print(tmpfs_folder())
        return 0
    print("usage: python -m tests.pgdirs tmpfs|tmpfs-folder", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
