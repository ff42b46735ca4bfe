"""One comment on a pull request that each push updates in place (a "sticky" comment), over GitHub's REST API.

The comment is found again by a marker in its body: `GET /repos/{repo}/issues/{number}/comments`
(pull requests are issues to this API), then `PATCH /repos/{repo}/issues/comments/{id}` or, the first
time, `POST /repos/{repo}/issues/{number}/comments`. The repository, token and API root are the ones
GitHub Actions sets (`GITHUB_REPOSITORY`, `GITHUB_TOKEN`, `GITHUB_API_URL`); the token never reaches
a message. A fork's pull request gets a read-only token: GitHub answers 403, which the caller may
accept (the job's summary still holds the table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

API_VERSION = "2022-11-28"
PAGE_SIZE = 100
MAX_PAGES = 30  # 3000 comments: past that the marker is looked for no further, and a new comment is made


class GitHubError(RuntimeError):
    """GitHub refused or could not be reached; `status` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def _settings(env: Mapping[str, str]) -> tuple[str, str, str]:
    missing = [name for name in ("GITHUB_REPOSITORY", "GITHUB_TOKEN") if not env.get(name, "").strip()]
    if missing:
        raise GitHubError(f"{' and '.join(missing)} not set: the workflow step must pass them (docs/ci.md)")
    api = env.get("GITHUB_API_URL", "").strip() or "https://api.github.com"
    return api.rstrip("/"), env["GITHUB_REPOSITORY"].strip(), env["GITHUB_TOKEN"].strip()


def _checked(response: httpx.Response, what: str) -> Any:
    if response.status_code >= 400:
        message = ""
        try:
            message = str(response.json().get("message", ""))
        except ValueError:
            message = response.text[:200]
        raise GitHubError(f"{what}: HTTP {response.status_code} {message}".rstrip(), response.status_code)
    return response.json()


def keep_comment(body: str, marker: str, *, number: int, env: Mapping[str, str], timeout: float = 30.0) -> str:
    """Update the pull request's comment holding `marker` to `body`, or make it; says which (with its URL)."""
    api, repo, token = _settings(env)
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
    }
    try:
        with httpx.Client(base_url=api, headers=headers, timeout=timeout) as client:
            existing = None
            for page in range(1, MAX_PAGES + 1):
                listed = _checked(
                    client.get(f"/repos/{repo}/issues/{number}/comments", params={"per_page": PAGE_SIZE, "page": page}),
                    f"listing the comments of {repo}#{number}",
                )
                existing = next((c for c in listed if marker in str(c.get("body", ""))), None)
                if existing is not None or len(listed) < PAGE_SIZE:
                    break
            if existing is not None:
                updated = _checked(
                    client.patch(f"/repos/{repo}/issues/comments/{existing['id']}", json={"body": body}),
                    f"updating comment {existing['id']} on {repo}#{number}",
                )
                return f"updated {updated.get('html_url', existing['id'])}"
            made = _checked(
                client.post(f"/repos/{repo}/issues/{number}/comments", json={"body": body}),
                f"commenting on {repo}#{number}",
            )
            return f"commented {made.get('html_url', made.get('id'))}"
    except httpx.HTTPError as error:
        raise GitHubError(f"GitHub API at {api}: {type(error).__name__}: {error}") from None
