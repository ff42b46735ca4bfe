"""The eval harness: runs one case against an MCP server and a model, and records what happened.

For a Braintrust task (one event loop, concurrent trials):

    from harness.run.shared import run_trial, close_shared_runners
    record = await run_trial(case, hooks.trial_index)        # TrialRecord; never raises for infra trouble
    await close_shared_runners()                              # optional: also done at interpreter exit

Standalone: `async with TrialRunner(Settings.from_env()) as runner: await runner.run(case, 0)`.
"""
