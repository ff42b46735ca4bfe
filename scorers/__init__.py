"""Scorers: pure functions of (TrialRecord, Case) returning an autoevals Score (score None = skipped).

One module per score, each declaring its `SPEC` (the list, in order: `scorers.registry.NAMES`),
plus the helpers they share (`trajectory_safety`, `trajectory_workflows`, `sqlinfo`, `dumps`, the
judge's modules) and Braintrust's metrics (`metrics`); `scorers.adapters` wraps them in Braintrust's
keyword signature. Nothing is re-exported here, so
that module names and the functions named after them never shadow each other.
"""
