"""Record what llama-server answers to the factuality judge's requests: the judge tests' inputs.

    python -m localmodel record-judge OUT_DIR

Starts the pinned server and sends the judge's own requests (the preflight's classification and
forced-choice check, and the first labelled example of datasets/judge/ as `make calibrate` asks
it) in the forms EVAL_JUDGE_TOOL_CHOICE names (scorers/judge_request.py), each saved as
`{"made_by", "request", "response"}` like `python -m localmodel record`. The bodies are built by
the code the suite sends them with (autoevals' classifier, then `rewrite_request`), so a replay
test can check that the suite still sends exactly what was recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoevals import LLMClassifier

from localmodel.pins import MODEL
from localmodel.record import exchange, save_recording
from localmodel.server import LocalServer, ServerOptions, free_port
from scorers.factuality import build_classifier, current_template, render_conversation
from scorers.judge_client import PREFLIGHT_ANSWER, JudgeSettings, forced_request, preflight_classifier
from scorers.judge_examples import examples_path, load_examples
from scorers.judge_request import rewrite_request

CHAT = "/v1/chat/completions"


def classifier_body(classifier: LLMClassifier, **render: str) -> dict[str, Any]:
    """The chat completion autoevals' classifier sends (its `extra_args` and its forced call)."""
    return {**classifier.extra_args, **classifier._build_args(**render)}


def unbounded(body: dict[str, Any]) -> dict[str, Any]:
    """A json_schema body without the `maxLength` caps: what the mode sent before they were added."""
    schema = body["response_format"]["json_schema"]["schema"]
    properties = {
        name: {k: v for k, v in spec.items() if k != "maxLength"} for name, spec in schema["properties"].items()
    }
    inner = {**body["response_format"]["json_schema"], "schema": {**schema, "properties": properties}}
    return {**body, "response_format": {**body["response_format"], "json_schema": inner}}


def judge_bodies(model: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """File name -> (what the request shows, body), in the order they are sent."""
    settings = JudgeSettings("openai", "http://unused/v1", model, "local")
    preflight = classifier_body(preflight_classifier(model, None), output=PREFLIGHT_ANSWER, expected=PREFLIGHT_ANSWER)
    first = load_examples(examples_path())[0]
    conversation = render_conversation(first.conversation[0], first.conversation[1:])
    example = classifier_body(
        build_classifier(settings, None, current_template()),  # type: ignore[arg-type]  # no client: only the body
        output=first.submission,
        expected=first.expected,
        input=conversation,
    )

    return {
        "judge_json_schema_preflight_classification": (
            "preflight classification",
            rewrite_request(preflight, "json_schema"),
        ),
        "judge_json_schema_preflight_forced": (
            "preflight forced-choice check",
            rewrite_request(forced_request(settings), "json_schema"),
        ),
        "judge_json_schema_example": (
            f"example {first.id}, label {first.label}",
            rewrite_request(example, "json_schema"),
        ),
        "judge_json_schema_unbounded": (
            "preflight classification, no maxLength",
            unbounded(rewrite_request(preflight, "json_schema")),
        ),
        "judge_required_preflight_classification": ("preflight classification", rewrite_request(preflight, "required")),
        "judge_required_example": (f"example {first.id}, label {first.label}", rewrite_request(example, "required")),
    }


def main(out: Path, binary: Path, model: Path, template: Path | None, log: Path) -> int:
    options = ServerOptions(binary, model, MODEL.alias, free_port(), MODEL.context_window, chat_template=template)
    out.mkdir(parents=True, exist_ok=True)
    with LocalServer(options, log) as server:  # the log stays out of the recordings' folder
        for name, (what, body) in judge_bodies(MODEL.alias).items():
            record = exchange(server.url, "POST", CHAT, body)
            print(save_recording(out, name, record, options, what=what), flush=True)
    return 0
