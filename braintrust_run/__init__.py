"""The machinery of a run of the evals through Braintrust, behind the eval files of `evals/`.

The run's settings (`settings`) and choices whichever door starts it (`doors`), its checks before
the first trial (`start`), the task (`task`), the scorers as the run keeps their scores (`scoring`),
the reporter and the run gate (`report`, `gate`), adaptive rounds and A/B arms (`adaptive`), shards
and model slots (`shard`, `slots`), experiment metadata and bases (`experiments`), login, uploads
and the SDK's private API (`login`, `uploads`, `sdk_private`), the playground (`playground`), the
judge's calibration (`calibration`), what one process's run shares (`run_state`), and the commands
that act on Braintrust beside a run (`dataset`, `rejudge`, `rescore_upload`, `shards_merged`,
`bench_list`).
"""
