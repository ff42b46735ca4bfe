"""The sticky pull-request comment against a stand-in of GitHub's REST API on 127.0.0.1: made once,
then updated in place (found by its marker, on any page), a fork's read-only token said in one line,
and the token in no message."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from analysis import pr_comment
from analysis.github_comment import GitHubError, keep_comment
from tests.fakes.jsonserver import JsonServer, Request, Response

REPO, NUMBER = "octo/neon-evals", 17
TOKEN = "ghs_" + "t0k3n" * 8
MARKER = pr_comment.MARKER


@dataclass
class FakeGitHub:
    """The three endpoints of issue comments, with the pagination GitHub uses (`per_page`, `page`)."""

    comments: list[dict[str, Any]] = field(default_factory=list)
    refuse_writes: int | None = None  # a status for POST and PATCH (403: a fork's read-only token)

    def answer(self, request: Request) -> Response:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return Response(401, {"message": "Bad credentials"})
        listing = f"/repos/{REPO}/issues/{NUMBER}/comments"
        if request.method == "GET" and request.path == listing:
            size, page = int(request.query["per_page"]), int(request.query["page"])
            return Response(200, self.comments[(page - 1) * size : page * size])
        if self.refuse_writes and request.method in ("POST", "PATCH"):
            return Response(self.refuse_writes, {"message": "Resource not accessible by integration"})
        if request.method == "POST" and request.path == listing:
            made = {"id": 1000 + len(self.comments), "body": request.body["body"], "html_url": "https://gh/c/new"}
            self.comments.append(made)
            return Response(201, made)
        prefix = f"/repos/{REPO}/issues/comments/"
        if request.method == "PATCH" and request.path.startswith(prefix):
            comment_id = int(request.path.removeprefix(prefix))
            [comment] = [c for c in self.comments if c["id"] == comment_id]
            comment["body"] = request.body["body"]
            return Response(200, {**comment, "html_url": f"https://gh/c/{comment_id}"})
        return Response(404, {"message": "Not Found"})


@pytest.fixture
def github() -> Iterator[tuple[FakeGitHub, JsonServer]]:
    fake = FakeGitHub()
    server = JsonServer({}, fallback=fake.answer).start()
    try:
        yield fake, server
    finally:
        server.stop()


def env_for(server: JsonServer, token: str = TOKEN) -> dict[str, str]:
    return {"GITHUB_API_URL": server.url, "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": token}


def test_the_comment_is_made_once_then_updated_in_place(github: tuple[FakeGitHub, JsonServer]) -> None:
    fake, server = github
    fake.comments.append({"id": 7, "body": "a reviewer's comment"})
    first = keep_comment(f"{MARKER}\nfirst push", MARKER, number=NUMBER, env=env_for(server))
    assert first == "commented https://gh/c/new"
    second = keep_comment(f"{MARKER}\nsecond push", MARKER, number=NUMBER, env=env_for(server))
    assert second == "updated https://gh/c/1001"
    assert [c["body"] for c in fake.comments] == ["a reviewer's comment", f"{MARKER}\nsecond push"]
    writes = [r for r in server.requests if r.method != "GET"]
    assert [(r.method, r.headers.get("x-github-api-version")) for r in writes] == [
        ("POST", "2022-11-28"),
        ("PATCH", "2022-11-28"),
    ]


def test_the_marker_is_found_past_the_first_page(github: tuple[FakeGitHub, JsonServer]) -> None:
    fake, server = github
    fake.comments += [{"id": n, "body": f"chatter {n}"} for n in range(150)]
    fake.comments.append({"id": 999, "body": f"{MARKER}\nold table"})
    assert keep_comment(f"{MARKER}\nnew", MARKER, number=NUMBER, env=env_for(server)) == "updated https://gh/c/999"
    assert [r.query.get("page") for r in server.requests if r.method == "GET"] == ["1", "2"]
    assert len(fake.comments) == 151


def test_a_read_only_token_is_a_403_naming_the_pull_request_never_the_token(
    github: tuple[FakeGitHub, JsonServer],
) -> None:
    fake, server = github
    fake.refuse_writes = 403
    with pytest.raises(GitHubError) as raised:
        keep_comment(f"{MARKER}\nx", MARKER, number=NUMBER, env=env_for(server))
    assert raised.value.status == 403
    assert str(raised.value) == f"commenting on {REPO}#{NUMBER}: HTTP 403 Resource not accessible by integration"
    with pytest.raises(GitHubError, match="HTTP 401 Bad credentials") as wrong:
        keep_comment("x", MARKER, number=NUMBER, env=env_for(server, token="ghs_wrong"))
    assert TOKEN not in str(wrong.value) and "ghs_wrong" not in str(wrong.value)


def test_missing_settings_and_a_dead_api_are_named() -> None:
    with pytest.raises(GitHubError, match="GITHUB_REPOSITORY and GITHUB_TOKEN not set"):
        keep_comment("x", MARKER, number=NUMBER, env={})
    dead = {"GITHUB_API_URL": "http://127.0.0.1:9", "GITHUB_REPOSITORY": REPO, "GITHUB_TOKEN": TOKEN}
    with pytest.raises(GitHubError, match=r"GitHub API at http://127\.0\.0\.1:9: ConnectError") as raised:
        keep_comment("x", MARKER, number=NUMBER, env=dead, timeout=5)
    assert TOKEN not in str(raised.value)


def test_the_command_posts_its_table_once_per_key_and_a_forks_refusal_is_not_a_failure(
    github: tuple[FakeGitHub, JsonServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake, server = github
    for name, value in env_for(server).items():
        monkeypatch.setenv(name, value)
    run = tmp_path / "pr-17-1"
    run.mkdir()  # a run that stopped at its start: the comment says so
    for key in ("offline", "keyed", "offline"):
        assert pr_comment.main([str(run), "--post", str(NUMBER), "--key", key]) == 0
    assert [c["body"].splitlines()[0] for c in fake.comments] == [
        pr_comment.marker("offline"),
        pr_comment.marker("keyed"),
    ]
    assert "**No trial records in `pr-17-1`**" in fake.comments[0]["body"]
    assert capsys.readouterr().err.splitlines()[-1] == "pr_comment: updated https://gh/c/1000"
    fake.refuse_writes, fake.comments = 403, []
    assert pr_comment.main([str(run), "--post", str(NUMBER), "--refusal-ok"]) == 0
    assert "HTTP 403" in capsys.readouterr().err
    assert pr_comment.main([str(run), "--post", str(NUMBER)]) == 1
    assert TOKEN not in capsys.readouterr().err
