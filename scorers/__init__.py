"""Scorers: pure functions of (TrialRecord, Case) returning an autoevals Score (score None = skipped).

One module per concern (integrity, data_integrity, trajectory, cleanup, factuality, metrics);
`scorers.adapters` wraps them in Braintrust's keyword signature. Nothing is re-exported here, so
that module names and the functions named after them never shadow each other.
"""
