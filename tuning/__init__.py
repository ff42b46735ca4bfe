"""Tuning a server's tool descriptions under a safety guarantee, and watching the server's own changes.

`splits` fixes which cases train the proposer, choose candidates and confirm the finalist;
`acceptance` is the rule a candidate must pass against the incumbent on validation; `proposer` (the
documented edit operators) and `model_proposer` (a model reading the train trials) make candidates;
`evidence` reads the runs' records; `loop` runs it all through the real CLI (`make tune`) and `page`
shows it. `surface_diff` and `watch` compare a server's tool surface with the last one kept and A/B
the cases a change touches (`make watch`). docs/tuning.md says what each is for.
"""
