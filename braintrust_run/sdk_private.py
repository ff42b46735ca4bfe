"""Every use of the Braintrust SDK's private API, in one place, with the version it was read from.

The SDK offers no public way to read three things the suite needs: the span customizers already set
(to add the lean-upload one beside them, not instead), its background logger (to point its dropped
batches at a folder the run counts, and to flush it), and its login state (the key a `--api-key`
login holds). Each is one function here; nothing else in the project imports a private SDK name
(`tests/evals/test_braintrust_private.py` checks both, and fails when the installed SDK is not the one
these were read from, so a new SDK is read again before it is trusted).
"""

from __future__ import annotations

from typing import Any

from braintrust import SpanCustomizer

READ_FROM = "0.48.1"  # braintrust's version whose source these functions were read from


def span_customizers() -> tuple[SpanCustomizer, ...]:
    """The span customizers set so far (`braintrust.span_customizer._get_span_customizers`)."""
    from braintrust.span_customizer import _get_span_customizers

    return tuple(_get_span_customizers())


def background_logger() -> Any:
    """The SDK's background logger (`_internal_get_global_state().global_bg_logger()`): it retries, then
    drops a batch, writing it to its `failed_publish_payloads_dir` first when that is set."""
    from braintrust.logger import _internal_get_global_state

    return _internal_get_global_state().global_bg_logger()


def login_token() -> str | None:
    """The key the SDK logged in with (`braintrust eval --api-key`, `braintrust.login`), or None."""
    from braintrust.logger import _internal_get_global_state

    state = _internal_get_global_state()
    return str(state.login_token) if state.logged_in and state.login_token else None
