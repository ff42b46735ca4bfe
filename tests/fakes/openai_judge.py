"""A fake OpenAI-compatible judge: a real HTTP server on 127.0.0.1 speaking Chat Completions.

The code under test runs the real openai SDK and autoevals end to end; this server records each
request and answers with a forced `select_choice` tool call carrying the configured choice.

    with FakeJudge(choice="C") as judge:
        os.environ.update(judge.env())   # OPENAI_BASE_URL, OPENAI_API_KEY, EVAL_JUDGE_PROVIDER
        ...
        judge.prompts[-1]                # the rendered prompt the judge saw

Pick the choice per request with `chooser=lambda body: "A" if "..." in prompt_of(body) else "C"`.
Like Anthropic's OpenAI-compatible endpoint, it refuses a forced function call for the Claude
models that refuse forced tool use (Sonnet 5.5, Opus 5.5) and `temperature` for those that refuse
sampling parameters (the 5.x generation), with an OpenAI-shaped 400; those are kept in `refused`.
`ignores_forced_choice=True` serves like llama-server, which reads `tool_choice` only as a string
and turns autoevals' `{"type": "function", ...}` into `auto` (tools/server/server-common.cpp): the
reply then calls the tool the prompt names, as a model left to choose does, or the only tool offered.
`answered_as` names the model in every reply (a local server answers with its own model's name).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from tests.fakes.anthropic_rules import NO_FORCED_TOOLS, NO_SAMPLING
from tests.fakes.jsonserver import JsonServer, Request, Response

Chooser = Callable[[dict[str, Any]], str]
PATHS = ("/v1/chat/completions", "/chat/completions")


def prompt_of(body: dict[str, Any]) -> str:
    """All message contents of a chat completion request, joined."""
    return "\n".join(str(message.get("content", "")) for message in body.get("messages", []))


class FakeJudge:
    """Serve `POST /v1/chat/completions`; answer `select_choice(choice, reasons)`.

    `choice` may be changed between requests; `chooser(body) -> choice` overrides it per request.
    `status`, when not 200, makes every answer an OpenAI-style error with that status;
    `delay_s` holds each answer back that long (for timeout tests).
    """

    def __init__(
        self,
        choice: str = "C",
        reasons: str = "The submission states the same facts as the expert answer.",
        chooser: Chooser | None = None,
        status: int = 200,
        delay_s: float = 0.0,
        ignores_forced_choice: bool = False,
        answered_as: str | None = None,
    ) -> None:
        self.ignores_forced_choice = ignores_forced_choice
        self.answered_as = answered_as
        self.choice = choice
        self.delay_s = delay_s
        self.reasons = reasons
        self.chooser = chooser
        self.status = status
        self._ids = itertools.count(1)
        self.refused: list[str] = []
        self._server = JsonServer({f"POST {path}": self._complete for path in PATHS})

    @property
    def url(self) -> str:
        """Base URL for the openai SDK (it appends /chat/completions)."""
        return f"{self._server.url}/v1"

    @property
    def requests(self) -> list[Request]:
        return [request for request in self._server.requests if request.path in PATHS]

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [request.body for request in self.requests]

    @property
    def prompts(self) -> list[str]:
        return [prompt_of(body) for body in self.bodies]

    def env(self) -> dict[str, str]:
        """Environment that routes the factuality judge here."""
        return {"EVAL_JUDGE_PROVIDER": "openai", "OPENAI_BASE_URL": self.url, "OPENAI_API_KEY": "fake-judge-key"}

    def reset(
        self, choice: str = "C", chooser: Chooser | None = None, status: int = 200, delay_s: float = 0.0
    ) -> FakeJudge:
        """Forget recorded requests and restore answers, so one server can serve many tests."""
        self.choice, self.chooser, self.status, self.delay_s = choice, chooser, status, delay_s
        self._server.requests.clear()
        return self

    def start(self) -> FakeJudge:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> FakeJudge:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    @staticmethod
    def _refusal(body: dict[str, Any]) -> str | None:
        model = str(body.get("model", ""))
        forced = isinstance(body.get("tool_choice"), dict) or body.get("tool_choice") == "required"
        if forced and NO_FORCED_TOOLS.match(model):
            return f"tool_choice forcing a function call is not supported for {model}; use 'auto' or 'none'."
        if body.get("temperature") not in (None, 1, 1.0) and NO_SAMPLING.match(model):
            return "`temperature` is deprecated for this model."
        return None

    def _chosen_tool(self, body: dict[str, Any]) -> str:
        """The function the reply calls: the forced one, unless forcing is ignored (then as `auto`)."""
        forced = body.get("tool_choice")
        if isinstance(forced, dict) and not self.ignores_forced_choice:
            return str(forced["function"]["name"])
        names = [str(tool["function"]["name"]) for tool in body.get("tools", [])]
        named = [name for name in names if name in prompt_of(body)]
        return (named or names or ["select_choice"])[0]

    def _complete(self, request: Request) -> Response:
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.status != 200:
            error = {"message": "fake judge error", "type": "server_error", "code": None, "param": None}
            return Response(self.status, {"error": error})
        body = request.body if isinstance(request.body, dict) else {}
        refusal = self._refusal(body)
        if refusal:
            self.refused.append(refusal)
            param = "tool_choice" if "tool_choice" in refusal else "temperature"
            error = {"message": refusal, "type": "invalid_request_error", "param": param, "code": None}
            return Response(400, {"error": error})
        choice = self.chooser(body) if self.chooser else self.choice
        number = next(self._ids)
        arguments = json.dumps({"reasons": self.reasons, "choice": choice})
        tool_call = {
            "id": f"call_{number}",
            "type": "function",
            "function": {"name": self._chosen_tool(body), "arguments": arguments},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        return Response(
            200,
            {
                "id": f"chatcmpl-fake-{number}",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": self.answered_as or str(body.get("model", "fake-judge")),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}],
                "usage": {"prompt_tokens": len(prompt_of(body)) // 4, "completion_tokens": 20, "total_tokens": 0},
            },
        )
