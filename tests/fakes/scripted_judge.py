"""A scripted judge: `FakeJudge` (OpenAI Chat Completions on 127.0.0.1) answering from a script.

The script says, per judge model, which choice to give when a marker text appears in the prompt
(markers are unique phrases of each example's submission). A request nothing in the script
matches gets the choice "?", which no template accepts: it shows up as a judge error, never as a
silent default.

    judge = FakeJudge(chooser=script_chooser({"judge-a": {"posts has 200 rows": "C"}}))

A judge that changes its mind when asked again: `repeat_chooser` reads a string of choices per
marker, one a request, in the order the requests came (the last one for any further request).

    judge = FakeJudge(chooser=repeat_chooser({"judge-f": {"posts has 200 rows": "CD"}}))  # C, then D
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping

from tests.fakes.openai_judge import Chooser, prompt_of

UNSCRIPTED = "?"


def script_chooser(scripts: Mapping[str, Mapping[str, str]]) -> Chooser:
    """A chooser reading `scripts[model][marker] -> choice`; the model "*" applies to any model."""

    def choose(body: dict[str, object]) -> str:
        prompt = prompt_of(body)
        script = scripts.get(str(body.get("model")), scripts.get("*", {}))
        for marker, choice in script.items():
            if marker in prompt:
                return choice
        return UNSCRIPTED

    return choose


def repeat_chooser(scripts: Mapping[str, Mapping[str, str]]) -> Chooser:
    """A chooser reading `scripts[model][marker] -> choices`: the n-th request naming the marker gets the
    n-th choice (the last once they run out); the model "*" applies to any model."""
    asked: Counter[tuple[str, str]] = Counter()
    lock = threading.Lock()

    def choose(body: dict[str, object]) -> str:
        prompt = prompt_of(body)
        model = str(body.get("model"))
        script = scripts.get(model, scripts.get("*", {}))
        for marker, choices in script.items():
            if marker in prompt:
                with lock:
                    seen = asked[(model, marker)]
                    asked[(model, marker)] += 1
                return choices[min(seen, len(choices) - 1)]
        return UNSCRIPTED

    return choose
