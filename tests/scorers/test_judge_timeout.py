"""EVAL_JUDGE_TIMEOUT: the judge's per-request timeout is a setting (a CPU judge needs 160-180 s an
example, over the old fixed 120 s), it reaches the real openai client, and a bad value is refused.
And the reason for no judge names what turned it off, not a list of keys to set."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from braintrust_run.doors import judge_line
from harness.environment import forget_process_env
from scorers.factuality import factuality
from scorers.judge_client import DEFAULT_TIMEOUT_S, NO_JUDGE_REASON, judge_settings, no_judge_reason
from tests.fakes.openai_judge import FakeJudge
from tests.scorers.conftest import case, record
from tests.scorers.test_factuality import JUDGE_ENV

OPENAI = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "local"}


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeJudge]:
    for name in (*JUDGE_ENV, "EVAL_JUDGE_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    with FakeJudge() as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        yield fake


def test_the_timeout_is_read_with_a_default_and_sizes_the_deadline() -> None:
    default = judge_settings(OPENAI)
    assert default is not None and (default.timeout_s, default.deadline_s) == (DEFAULT_TIMEOUT_S, 600.0)
    slow = judge_settings({**OPENAI, "EVAL_JUDGE_TIMEOUT": "300"})
    assert slow is not None and slow.timeout_s == 300.0
    assert slow.deadline_s == 4 * 300.0  # three retries, each starting over, fit in the whole judgement
    for bad in ("0", "-5", "soon", "inf"):
        with pytest.raises(ValueError, match=f"EVAL_JUDGE_TIMEOUT='{bad}' is not a number of seconds above 0"):
            judge_settings({**OPENAI, "EVAL_JUDGE_TIMEOUT": bad})


async def test_the_setting_reaches_the_judges_requests(judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge slower than the timeout fails every attempt; raised above its delay, it judges."""
    trial, asked = record("add-column-description", final_answer="ok"), case("add-column-description")
    judge.delay_s = 0.6
    monkeypatch.setenv("EVAL_JUDGE_TIMEOUT", "0.2")
    forget_process_env()  # a run reads its settings once; this test changes them
    timed_out = await factuality(trial, asked)
    assert timed_out.score is None and "Timeout" in timed_out.metadata["judge_error"], timed_out.metadata
    monkeypatch.setenv("EVAL_JUDGE_TIMEOUT", "5")
    forget_process_env()
    judged = await factuality(trial, asked)
    assert judged.score == 1.0 and "judge_error" not in judged.metadata


def test_no_judge_says_what_turned_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL is set (a local model): 'set ... OPENAI_BASE_URL' would send the user in a circle."""
    for name in (*JUDGE_ENV, "EVAL_JUDGE_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    assert no_judge_reason({}) == NO_JUDGE_REASON
    off = {**OPENAI, "EVAL_JUDGE_PROVIDER": "none"}
    assert no_judge_reason(off) == "no judge configured: EVAL_JUDGE_PROVIDER=none turned the judge off"
    forced = {"EVAL_JUDGE_PROVIDER": "anthropic"}
    assert (
        no_judge_reason(forced) == "no judge configured: EVAL_JUDGE_PROVIDER=anthropic but ANTHROPIC_API_KEY is not set"
    )
    for name, value in off.items():
        monkeypatch.setenv(name, value)
    line = judge_line()  # what `make eval` prints on its first lines
    assert line == "factuality is n/a: no judge configured: EVAL_JUDGE_PROVIDER=none turned the judge off"
    assert "OPENAI_BASE_URL" not in line


async def test_the_factuality_reason_names_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*JUDGE_ENV, "EVAL_JUDGE_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EVAL_JUDGE_PROVIDER", "none")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    score = await factuality(record("add-column-description", final_answer="ok"), case("add-column-description"))
    assert score.score is None and score.metadata["reason"].endswith("EVAL_JUDGE_PROVIDER=none turned the judge off")


def test_the_launcher_stops_on_a_bad_timeout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evals import __main__ as launcher

    monkeypatch.setenv("EVAL_TRIALS", "1")  # no local-model line first
    monkeypatch.setenv("EVAL_SURFACE", "own")  # no surface to take first (a fresh clone has none cached)
    monkeypatch.setenv("EVAL_JUDGE_TIMEOUT", "soon")
    monkeypatch.setenv("EVAL_JUDGE_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setattr(launcher, "launch_environment", lambda _dotenv: dict(os.environ))  # no developer .env
    monkeypatch.setattr(launcher.subprocess, "Popen", None)  # nothing may start
    assert launcher.main([]) == 2
    assert "evals: stopping before any trial: EVAL_JUDGE_TIMEOUT='soon'" in capsys.readouterr().err
