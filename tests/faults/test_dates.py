"""Any day: the date-dependent code runs at fixed dates either side of every end-of-life date.

The dates come from the tables the harness reads (its rules table's own dates, and the installed
Anthropic SDK's deprecation list), so a new entry is covered without editing this test. Nothing here
reads the wall clock.
"""

from __future__ import annotations

import email.utils
from datetime import UTC, date, datetime, timedelta

import pytest

from harness.clock import fixed
from harness.config import ConfigError, Settings, new_run_id
from harness.models.rules import ANTHROPIC, end_of_life_dates
from harness.servers.neon.api import NeonAPI

DAY = timedelta(days=1)
END_OF_LIFE = sorted(end_of_life_dates().items())


def test_the_table_has_dates_and_every_deprecated_model_has_one() -> None:
    assert END_OF_LIFE, "no end-of-life dates known"
    assert all(ends is not None for _, (_, ends) in END_OF_LIFE), END_OF_LIFE
    deprecated = [rules.model.partition(":")[2] for rules in ANTHROPIC.values() if rules.status == "deprecated"]
    assert deprecated and set(deprecated) <= dict(END_OF_LIFE).keys()


def test_a_retired_model_the_sdk_no_longer_lists_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """anthropic 2.15 dropped claude-sonnet-4-5 from its list once it retired: the rules table keeps it."""
    import anthropic._data

    monkeypatch.setattr(anthropic._data, "DEPRECATED_MODELS", {})
    env = {"EVAL_MODEL": "anthropic:claude-sonnet-4-5-20250929", "ANTHROPIC_API_KEY": "sk-ant-test-0000"}
    with pytest.raises(ConfigError, match="reached end of life on November 30th, 2026"):
        Settings.from_env(env=env, dotenv_path=None, clock=fixed(datetime(2026, 12, 1, tzinfo=UTC)))


@pytest.mark.parametrize(("name", "dates"), END_OF_LIFE, ids=[name for name, _ in END_OF_LIFE])
def test_a_model_warns_up_to_its_end_of_life_and_stops_the_run_after(
    name: str, dates: tuple[str, date | None], capsys: pytest.CaptureFixture[str]
) -> None:
    written, ends = dates
    assert ends is not None
    env = {"EVAL_MODEL": f"anthropic:{name}", "ANTHROPIC_API_KEY": "sk-ant-test-0000"}
    for day in (ends - DAY, ends):
        settings = Settings.from_env(env=env, dotenv_path=None, clock=fixed(datetime.combine(day, datetime.min.time())))
        assert settings.model == f"anthropic:{name}"
        err = capsys.readouterr().err
        assert f"is deprecated and reaches end of life on {written}" in err, (day, err)
    with pytest.raises(ConfigError) as refused:
        Settings.from_env(env=env, dotenv_path=None, clock=fixed(datetime.combine(ends + DAY, datetime.min.time())))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"EVAL_MODEL: anthropic:{name} reached end of life on {written}")


@pytest.mark.parametrize(("name", "dates"), END_OF_LIFE, ids=[name for name, _ in END_OF_LIFE])
async def test_run_ids_and_retry_after_follow_the_given_clock(name: str, dates: tuple[str, date | None]) -> None:
    ends = dates[1]
    assert ends is not None
    for day in (ends - DAY, ends + DAY):
        moment = datetime.combine(day, datetime.min.time(), tzinfo=UTC) + timedelta(hours=13, minutes=5)
        assert new_run_id(fixed(moment)).startswith(day.strftime("%Y%m%d") + "T130500Z-")
        api = NeonAPI("http://127.0.0.1:9", None, clock=fixed(moment))
        try:
            # An HTTP-date Retry-After seven seconds after the clock's now: wait seven seconds, on any day.
            header = email.utils.format_datetime(moment + timedelta(seconds=7), usegmt=True)
            assert api._delay(1, header) == pytest.approx(7.0)
            assert api._delay(1, email.utils.format_datetime(moment - DAY, usegmt=True)) == 0.0
        finally:
            await api.aclose()
