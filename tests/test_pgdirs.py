"""Where `make check` puts the tests' clusters: this checkout's own folder on tmpfs, only when it is a
real tmpfs with room and the folder is this user's; anything else keeps them in `.localneon/`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import pgdirs


@pytest.fixture
def tmpfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in /dev/shm that passes for a tmpfs, for a stand-in checkout beside it."""
    shm = tmp_path / "shm"
    shm.mkdir()
    monkeypatch.setattr(pgdirs, "TMPFS", shm)
    monkeypatch.setattr(pgdirs, "_is_tmpfs", lambda mount_point: mount_point == shm)
    monkeypatch.setattr(pgdirs, "REPO_ROOT", tmp_path / "checkout")
    return shm


def test_each_checkout_and_user_has_a_folder_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = pgdirs.tmpfs_folder()
    assert mine.parent == Path("/dev/shm") and mine.name.startswith(f"localneon-tests-{os.getuid()}-")
    assert pgdirs.tmpfs_folder() == mine
    monkeypatch.setattr(pgdirs, "REPO_ROOT", Path("/elsewhere/another-checkout"))
    assert pgdirs.tmpfs_folder() != mine


def test_the_folder_is_made_where_a_tmpfs_has_room(tmpfs: Path) -> None:
    root = pgdirs.usable_tmpfs_root()
    assert root == pgdirs.tmpfs_folder() and root.parent == tmpfs
    assert root.is_dir() and root.stat().st_mode & 0o777 == 0o755  # the cluster's system user may enter it
    assert pgdirs.usable_tmpfs_root() == root  # and used as it is the next time


def test_the_worn_surface_cache_beside_the_clusters_is_the_checkouts(tmpfs: Path) -> None:
    """A snapshot `make eval` took into `.localneon/surfaces` is the one the tests on tmpfs wear."""
    root = pgdirs.usable_tmpfs_root()
    assert root is not None
    kept = pgdirs.REPO_ROOT / ".localneon" / "surfaces"
    assert (root / "surfaces").is_symlink() and (root / "surfaces").resolve() == kept.resolve()
    (kept / "taken.json").write_text("{}", encoding="utf-8")
    assert pgdirs.usable_tmpfs_root() == root and (root / "surfaces" / "taken.json").read_text() == "{}"


def test_too_little_room_keeps_the_disk(tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgdirs, "TMPFS_ROOM", 1 << 62)
    assert pgdirs.usable_tmpfs_root() is None
    assert not pgdirs.tmpfs_folder().exists()  # nothing made


def test_a_folder_that_is_not_a_tmpfs_keeps_the_disk(tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgdirs, "_is_tmpfs", lambda mount_point: False)
    assert pgdirs.usable_tmpfs_root() is None
    assert not pgdirs.tmpfs_folder().exists()


def test_a_link_somebody_planted_keeps_the_disk(tmpfs: Path) -> None:
    elsewhere = tmpfs / "elsewhere"
    elsewhere.mkdir()
    pgdirs.tmpfs_folder().symlink_to(elsewhere)  # /dev/shm is world-writable: anyone may make the name first
    assert pgdirs.usable_tmpfs_root() is None


def test_the_command_prints_the_folder_or_nothing(
    tmpfs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pgdirs.main(["tmpfs"]) == 0
    assert capsys.readouterr().out == f"{pgdirs.tmpfs_folder()}\n"
    monkeypatch.setattr(pgdirs, "_is_tmpfs", lambda mount_point: False)
    assert pgdirs.main(["tmpfs"]) == 0 and capsys.readouterr().out == ""  # make check then uses .localneon/
    assert pgdirs.main(["tmpfs-folder"]) == 0 and capsys.readouterr().out == f"{pgdirs.tmpfs_folder()}\n"
    assert pgdirs.main([]) == 2


def test_this_machine_s_shm_is_recognised_as_a_tmpfs_or_not() -> None:
    mounts = Path("/proc/mounts")
    expected = mounts.exists() and any(
        line.split()[1:3] == ["/dev/shm", "tmpfs"] for line in mounts.read_text(encoding="utf-8").splitlines()
    )
    assert pgdirs._is_tmpfs(Path("/dev/shm")) == expected
    assert not pgdirs._is_tmpfs(Path("/no/such/mount"))
