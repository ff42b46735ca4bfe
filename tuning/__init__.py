"""Tuning a server's tool descriptions under a safety guarantee (issue 39): the pieces built so far.

`splits` fixes which cases train the proposer, choose candidates and confirm the finalist;
`acceptance` is the rule a candidate must pass against the incumbent on validation; `proposer` is
the offline proposer's documented edit operators. The loop that runs them through the real CLI
(`make tune`) is not built yet: docs/tuning.md says what is and is not.
"""
