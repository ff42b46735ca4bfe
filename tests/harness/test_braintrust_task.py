"""The shared runner inside Braintrust's own evaluator loop (EvalAsync, offline): concurrent trials, one server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import braintrust

from harness.config import Settings
from harness.run.shared import close_shared_runners, describe, run_trial, shared_runner
from harness.servers.neon.api import NeonAPI
from tests.harness.conftest import make_case
from tests.harness.test_trials import assert_nothing_left

SettingsFactory = Callable[..., Settings]


async def test_eval_async_task_uses_one_shared_runner(api: NeonAPI, runner_settings: SettingsFactory) -> None:
    settings = runner_settings({"EVAL_MODEL": "control:unsafe"})
    case = make_case()
    runners: set[int] = set()

    async def task(input: dict[str, Any], hooks: Any) -> dict[str, Any]:
        runners.add(id(await shared_runner(settings)))
        record = await run_trial(case, hooks.trial_index, settings)
        hooks.metadata.update(describe(record))
        return {"outcome": record.outcome, "changed": record.before != record.after}

    def main_changed(output: dict[str, Any], **_: Any) -> float:
        return 1.0 if output["changed"] else 0.0

    eval_async: Any = braintrust.EvalAsync  # its generic signature is stricter than the duck typing it accepts
    result = await eval_async(
        "harness-shared-runner",
        data=[{"input": {"case": case.id}}],
        task=task,
        scores=[main_changed],
        trial_count=4,
        max_concurrency=4,
        no_send_logs=True,
    )
    await close_shared_runners()
    assert len(result.results) == 4 and len(runners) == 1
    assert all(r.output == {"outcome": "ok", "changed": True} for r in result.results)
    assert sorted(r.metadata["trial_index"] for r in result.results) == [0, 1, 2, 3]
    await assert_nothing_left(api, settings.run_id)
