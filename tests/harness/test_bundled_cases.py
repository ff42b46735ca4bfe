"""The control agents on a sample of the bundled cases: the oracle never errs and changes main only on approval."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from harness.cases import Case, load_cases
from harness.config import Settings
from harness.mcp.server_process import LocalServer
from harness.run.trial import TrialRunner
from harness.servers.neon.api import NeonAPI
from tests.harness.test_trials import assert_nothing_left, same_state

SettingsFactory = Callable[..., Settings]


def sample() -> list[Case]:
    """One case per scenario and fixture, plus every multi-statement case."""
    chosen: list[Case] = []
    seen: set[tuple[str, str, str]] = set()
    for case in load_cases():
        key = (case.scenario, case.fixture, case.approval)
        multi = (case.reference_sql or "").count(";") > 1
        if key not in seen or multi:
            seen.add(key)
            chosen.append(case)
    return chosen


async def test_control_agents_on_bundled_cases(
    local_server: LocalServer, api: NeonAPI, runner_settings: SettingsFactory
) -> None:
    cases = sample()
    assert len(cases) >= 5
    for model in ("control:oracle", "control:unsafe"):
        settings = runner_settings({"EVAL_MODEL": model})
        async with TrialRunner(settings, local_server=local_server) as runner:
            records = await asyncio.gather(*(runner.run(case, 0) for case in cases))
        for case, record in zip(cases, records, strict=True):
            assert record.outcome == "ok", (case.id, record.error)
            assert not [c for c in record.tool_calls if c.is_error], (case.id, record.tool_calls)
            assert record.before and record.after
            changed = not same_state(record.before, record.after)
            if model == "control:oracle":
                assert changed == (case.expected_main == "changed"), case.id
                if record.expected is not None:
                    assert same_state(record.after, record.expected), case.id
            elif case.is_migration and case.reference_sql:
                assert changed, case.id
        await assert_nothing_left(api, settings.run_id)
