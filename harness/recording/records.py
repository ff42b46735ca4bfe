"""The trial record: the one shape everything after the harness reads.

A trial record says exactly what happened in one run of one case and how it was produced,
so that scorers are pure functions of it, a past run can be re-scored, and results stores
and reports never need to talk to a server again.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# How a trial ended. Everything but "ok" and "infra_error" is the model's doing and scores as such;
# "infra_error" (server, transport, API refusal of the request) cannot be judged and is n/a.
# - ok: the model gave its final answer to the last user turn;
# - turn_cap: it was still calling tools after EVAL_MAX_TURNS model calls;
# - timeout: the trial ran past EVAL_TRIAL_TIMEOUT;
# - max_tokens: its reply was cut at EVAL_MAX_TOKENS (stop_reason max_tokens): not a final answer;
# - refusal: it declined (stop_reason refusal);
# - context_window_exceeded: the conversation outgrew the model's context window
#   (stop_reason model_context_window_exceeded, or the server's 400 saying the prompt exceeds it);
# - tool_call_as_text: its last reply was a tool call written as text (a ```json {"name", "arguments"}
#   block, `<tool_call>` markers) that the server did not parse into a call, or one the server failed to
#   parse (llama-server's 500 "does not match the expected ... format"): neither a call nor an answer.
Outcome = Literal[
    "ok",
    "turn_cap",
    "timeout",
    "max_tokens",
    "refusal",
    "context_window_exceeded",
    "tool_call_as_text",
    "infra_error",
]

DUMP_COMPLETE_MARKER = "PostgreSQL database dump complete"


class ToolCall(BaseModel):
    """One tool call the model made, and what came back."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)  # as the model sent them (flat)
    forwarded_arguments: dict[str, Any] | None = None  # as sent to the server (e.g. {"params": ...}); None if not sent
    result_text: str = ""  # excerpt, capped by the harness
    is_error: bool = False
    decoy: bool = False  # the tool was a decoy: never forwarded to the server
    unknown: bool = False  # the model named a tool that was not offered
    duration_ms: float = 0.0
    turn: int = 0  # index of the model turn that issued it (0-based)
    result_bytes: int = 0  # the result's size as the server sent it (UTF-8)
    result_cut: bool = False  # the model got only the first EVAL_MAX_TOOL_RESULT_BYTES of it


class TableFingerprint(BaseModel):
    """Row count and an order-independent content hash of one table."""

    rows: int
    content_hash: str


class Snapshot(BaseModel):
    """The state of a branch at one moment: its schema dump and data fingerprints."""

    schema_sql: str | None = None  # raw `pg_dump --schema-only` text (or Neon's schema endpoint)
    tables: dict[str, TableFingerprint] = Field(default_factory=dict)  # key: "schema.table"
    # What the dump leaves out but a later trial would feel: role and database settings, grants.
    environment: dict[str, list[str]] = Field(default_factory=dict)
    error: str | None = None  # why capture failed, if it did
    # Whose failure `error` is: "model" when what the model left (its settings, limits, objects) made
    # main uncapturable (the integrity scores are then 0, not n/a), else "infrastructure".
    fault: Literal["model", "infrastructure"] | None = None

    @property
    def dump_complete(self) -> bool:
        return self.schema_sql is not None and DUMP_COMPLETE_MARKER in self.schema_sql


class Usage(BaseModel):
    """Tokens the model consumed over the whole trial."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    thinking_tokens: int = 0  # the part of output_tokens spent thinking (already in output_tokens)
    model_calls: int = 0
    # Requests the server answered with an error (5xx, 429) that the SDK sent again or gave up on:
    # not in the counts above, which are what the answers said (harness/models/attempts.py).
    failed_requests: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.thinking_tokens += other.thinking_tokens
        self.model_calls += other.model_calls
        self.failed_requests += other.failed_requests

    @property
    def prompt_tokens(self) -> int:
        """Every input token sent: uncached, written to the cache, and read from it."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def cache_hit_ratio(usages: list[Usage]) -> float | None:
    """Share of prompt tokens served from the prompt cache over `usages`; None when nothing was sent."""
    sent = sum(usage.prompt_tokens for usage in usages)
    return round(sum(usage.cache_read_input_tokens for usage in usages) / sent, 4) if sent else None


class TrialConfig(BaseModel):
    """How a trial was produced; carried on every record and into experiment metadata."""

    model: str  # e.g. "anthropic:claude-sonnet-4-6", "control:oracle"
    server: str  # "local", "neon", or a URL / command for any other server
    # Which server family served the trial (harness/servers/registry.py): whose tool roles and whose
    # terms for the case the scorers judge it by. Records from before there were two are Neon's.
    server_family: str = "neon"
    server_identity: str = ""  # the server as comparison keys name it, e.g. "@bytebase/dbhub@1.4.0"
    tool_count: int = 0  # tools the model saw, decoys included
    decoy_count: int = 0
    description_variant: str = "default"
    surface: str = ""  # whose words the tools were described in (Settings.surface); "" on older records
    tool_view_hash: str = ""  # hash of exactly what the model saw (names, descriptions, schemas, order)
    seed: int | None = None
    temperature: float | None = None
    max_turns: int = 0
    max_tokens: int = 0
    system_prompt: str | None = None
    context_window: int | None = None  # the model's context in tokens: rules, EVAL_CONTEXT_WINDOW or the server


class TrialRecord(BaseModel):
    """Everything one trial did, observed from outside the model."""

    case_id: str
    trial_index: int = 0
    case_hash: str = ""  # Case.content_hash() of the case as run: compare refuses pairs whose case changed
    config: TrialConfig
    project_id: str | None = None
    default_branch_id: str | None = None
    default_branch_name: str | None = None
    input: str = ""  # the rendered first user message
    follow_ups: list[str] = Field(default_factory=list)  # follow-up user turns actually sent
    final_answer: str = ""  # the model's last text answer
    messages: list[dict[str, Any]] = Field(default_factory=list)  # transcript, Anthropic message format
    tool_calls: list[ToolCall] = Field(default_factory=list)
    before: Snapshot | None = None  # main branch before the model ran
    after: Snapshot | None = None  # main branch after the model ran
    expected: Snapshot | None = None  # main at trial start + reference SQL, when main should change
    # Main just before the user's approving answer was sent (approve cases that got that far): a change
    # made before it was made without approval, whatever main looks like at the end.
    at_approval: Snapshot | None = None
    # Each copy of main the model had made and not removed at that moment (Neon: the temporary branches
    # its staging calls created), by id: what it staged or tried there is what the user was asked about.
    staged: dict[str, Snapshot] = Field(default_factory=dict)
    branches_left: list[str] = Field(default_factory=list)  # branches created during the trial, alive at the end
    # The annotations (readOnlyHint, destructiveHint, ...) the server listed, per tool name, before the
    # view transform: which tools are destructive is the server's word, not the scorer's.
    tool_annotations: dict[str, dict[str, Any]] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None  # None when the model has no known price
    turns: int = 0  # model calls made
    outcome: Outcome = "ok"
    error: str | None = None  # reason for a non-ok outcome
    cleanup_error: str | None = None  # a sandbox that could not be cleaned up: the run fails (exit 1)
    # What the harness did about the sandbox that a reader should know (a pool project that no longer
    # held its fixture was replaced before this trial, and how it differed).
    sandbox_notes: list[str] = Field(default_factory=list)
    started_at: str = ""  # ISO 8601, UTC
    # Seconds spent waiting for a model slot (EVAL_PROVIDER_CONCURRENCY) before the trial started: not in
    # duration_s, not under EVAL_TRIAL_TIMEOUT, as waiting in a queue is not the model's doing.
    queue_s: float = 0.0
    answered_by: list[str] = Field(default_factory=list)  # the model names the responses gave, in first-seen order
    duration_s: float = 0.0
    timings: dict[str, float] = Field(default_factory=dict)  # seconds per phase: sandbox, model, tools, capture

    def calls_named(self, name: str) -> list[ToolCall]:
        return [call for call in self.tool_calls if call.name == name]
