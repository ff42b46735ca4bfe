"""Identifiers shaped like Neon's, so tools and clients see familiar ids."""

from __future__ import annotations

import secrets
import string
import uuid
from datetime import UTC, datetime

_ADJECTIVES = tuple(
    [
        "shiny",
        "bold",
        "calm",
        "young",
        "quiet",
        "lively",
        "misty",
        "proud",
        "silent",
        "snowy",
        "sweet",
        "wild",
        "winter",
        "autumn",
        "royal",
        "plain",
        "polished",
        "late",
        "little",
        "lucky",
        "hidden",
        "gentle",
        "green",
        "ancient",
        "billowing",
        "bitter",
        "blue",
        "cold",
        "damp",
        "dark",
    ]
)
_NOUNS = tuple(
    [
        "cell",
        "wind",
        "cloud",
        "river",
        "meadow",
        "forest",
        "glade",
        "haze",
        "lake",
        "leaf",
        "moon",
        "morning",
        "mountain",
        "night",
        "pine",
        "rain",
        "sea",
        "shadow",
        "sky",
        "smoke",
        "snow",
        "sound",
        "star",
        "sun",
        "surf",
        "thunder",
        "tree",
        "water",
        "wave",
        "bird",
        "breeze",
        "brook",
    ]
)
_ALNUM = string.ascii_lowercase + string.digits


def _words() -> str:
    return f"{secrets.choice(_ADJECTIVES)}-{secrets.choice(_NOUNS)}"


def random_alnum(length: int) -> str:
    """Lower-case letters and digits, for suffixes that must be valid in SQL identifiers."""
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


def project_id() -> str:
    """Like ``shiny-cell-31842735``."""
    return f"{_words()}-{secrets.randbelow(10**8):08d}"


def branch_id() -> str:
    """Like ``br-misty-lake-a1b2c3d4``."""
    return f"br-{_words()}-{random_alnum(8)}"


def endpoint_id() -> str:
    """Like ``ep-quiet-sea-a1b2c3d4``."""
    return f"ep-{_words()}-{random_alnum(8)}"


def operation_id() -> str:
    """Operations are UUIDs in Neon's API."""
    return str(uuid.uuid4())


def migration_id() -> str:
    """A random id the model carries from prepare to complete."""
    return str(uuid.uuid4())


def utc_stamp() -> str:
    """A compact UTC timestamp for temporary branch names."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
