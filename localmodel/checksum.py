"""sha256 checks for what the smoke downloads: a file that does not match its pin is refused, never used."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 1 << 20


class ChecksumError(RuntimeError):
    """A downloaded file is not the pinned one; the message names the file and both digests."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, expected: str, what: str) -> None:
    """Raise ChecksumError unless `path` hashes to `expected`; the bad file is removed so a rerun fetches
    it again instead of failing on the same leftover."""
    actual = sha256_of(path)
    if actual != expected.lower():
        path.unlink(missing_ok=True)
        raise ChecksumError(
            f"{what}: {path.name} has sha256 {actual}, but localmodel/pins.py pins {expected}; "
            "refusing to use it (removed; a rerun downloads it again)"
        )
