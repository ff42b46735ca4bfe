"""Tool choice among 20+ tools: read-only questions get read tools and no migration; risky DDL, however
casually asked for, still goes through `prepare_database_migration`."""

from evals._wiring import define_evals

define_evals("tool_selection", "tool_selection")
