"""A scripted judge: `FakeJudge` (OpenAI Chat Completions on 127.0.0.1) answering from a script.

The script says, per judge model, which choice to give when a marker text appears in the prompt
(markers are unique phrases of each example's submission). A request nothing in the script
matches gets the choice "?", which no template accepts: it shows up as a judge error, never as a
silent default.

    judge = FakeJudge(chooser=script_chooser({"judge-a": {"posts has 200 rows": "C"}}))
"""

from __future__ import annotations

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
