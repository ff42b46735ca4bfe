"""Passwords inside connection strings, redacted wherever recorded text goes.

Why by shape and not by value: the harness knows its own keys, but a server hands out database
passwords it never told the harness (`get_connection_string`, the REST API's `connection_uri`).
Any `scheme://user:password@host` and any `password=...` key/value is reduced to the marker, the
rest (user, host, database) kept so the record still says which database was meant.
"""

from __future__ import annotations

import re

MARKER = "[REDACTED]"

# scheme://user:password@ — the password part stops at '@' (percent-encoded in a valid URI).
_URI_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\"'<>\\]*:)(?P<secret>[^\s@/\"'<>\\]+)(?=@)")
# libpq key/value strings and environment assignments: password=..., PGPASSWORD=...
_KEY_PASSWORD = re.compile(
    r"(?P<head>\b(?:PG)?password\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s'\"&;,]+)", re.IGNORECASE
)


def redact_connection_passwords(text: str) -> str:
    """`text` with every password of a connection string replaced by the marker."""
    text = _URI_PASSWORD.sub(lambda m: m.group("head") + MARKER if m.group("secret") != MARKER else m.group(0), text)
    return _KEY_PASSWORD.sub(lambda m: m.group("head") + MARKER, text)
