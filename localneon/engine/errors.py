"""Errors that carry an HTTP status and a message fit for a model or an API client."""

from __future__ import annotations


class LocalNeonError(Exception):
    """A request that cannot be honoured; the message says what and why."""

    status = 400
    code = ""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(LocalNeonError):
    status = 400


class NotFound(LocalNeonError):
    status = 404


class Conflict(LocalNeonError):
    status = 409


class Locked(LocalNeonError):
    status = 423
