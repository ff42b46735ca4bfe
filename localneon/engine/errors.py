"""Errors that carry an HTTP status and a message fit for a model or an API client."""

from __future__ import annotations

NEON_BRANCH_NOT_FOUND = "branch not found"


class LocalNeonError(Exception):
    """A request that cannot be honoured; the message says what and why."""

    status = 400
    code = ""
    api_error = False  # True: the refusal of Neon's API itself, which Neon's tools pass on as it came

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(LocalNeonError):
    status = 400


class NotFound(LocalNeonError):
    status = 404


class BranchNotFound(NotFound):
    """A branch id that names no branch of the project: Neon's API answers 404 with its own words,
    ``{"code": "", "message": "branch not found"}`` (the body Neon's clients report, e.g.
    terraform-provider-neon's "[HTTP Code: 404][Error Code: ] branch not found"). A branch *name*
    where an id is asked is such an id: Neon's API looks branches up by id only."""

    api_error = True

    def __init__(self) -> None:
        super().__init__(NEON_BRANCH_NOT_FOUND)


class Conflict(LocalNeonError):
    status = 409


class Locked(LocalNeonError):
    status = 423
