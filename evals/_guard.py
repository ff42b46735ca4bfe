"""Bad input stops `braintrust eval` with a non-zero exit, however the CLI was started.

Why: the CLI imports each eval file and, without `--terminate-on-failure`, prints an import error
and carries on with the other files, so `braintrust eval evals/` on a broken dataset exited 0
having measured nothing. A `SystemExit` is not an `Exception`, so the CLI cannot swallow it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from harness.cases import DatasetError
from harness.config import ConfigError

P = ParamSpec("P")
R = TypeVar("R")
EXIT_BAD_INPUT = 2


def stops_the_run(define: Callable[P, R]) -> Callable[P, R]:
    """Turn a dataset or configuration error raised while defining evals into a clean exit 2."""

    @functools.wraps(define)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return define(*args, **kwargs)
        except (DatasetError, ConfigError, ValueError) as error:
            print(f"evals: stopping before any trial: {error}", file=sys.stderr, flush=True)
            raise SystemExit(EXIT_BAD_INPUT) from error

    return guarded
