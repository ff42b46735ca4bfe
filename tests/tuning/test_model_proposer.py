"""The model proposer against a stand-in model over real HTTP: what its one request carries (train
cases only, nothing secret), what it makes of the answer, and the errors it names.

The stand-in is an OpenAI-compatible Chat Completions endpoint on 127.0.0.1 (`tests.fakes.jsonserver`)
that keeps every request as sent and answers with scripted text; the proposer runs the real openai
SDK against it. The trials are real records of bundled cases (an agent that ran the case's DDL on
main with `run_sql`), re-scored by today's scorers, of every part of a seeded split.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from analysis.rescore import ScoredTrial, rescore
from analysis.summary import OVERALL
from harness.cases import Case, load_cases
from harness.recording.records import ToolCall, TrialConfig, TrialRecord
from localneon.mcp.descriptions import load_texts
from tests.fakes.jsonserver import JsonServer, Request, Response
from tuning.model_proposer import (
    OPERATOR,
    PROVIDER_VARIABLE,
    ProposerAnswerError,
    ProposerRoute,
    answer_cost,
    no_route_reason,
    preflight,
    propose_with_model,
)
from tuning.splits import Splits, split_cases

PROJECT = "proj-tune-standin"
SECRET = "fake-proposer-key-5d1e9a0c7b"  # the route's key: in the Authorization header, nowhere else
OTHER_SECRET = "fake-other-key-83f2c61d"  # another key of the environment
DB_PASSWORD = "hunter2-db-password"
CASES = {case.id: case for case in load_cases()}
SPLITS = split_cases(CASES.values(), seed="tune")
CURRENT = {name: text.description for name, text in load_texts().items()}
STAGED = "prepare_database_migration"
PATHS = ("/v1/chat/completions", "/chat/completions")


class StandIn:
    """An OpenAI-compatible model: records each request body, answers with `answer(body)` as its text."""

    def __init__(self, answer: str | Callable[[dict[str, Any]], str] = "", status: int = 200) -> None:
        self.answer = answer
        self.status = status
        self.server = JsonServer({f"POST {path}": self._complete for path in PATHS})

    @property
    def url(self) -> str:
        return f"{self.server.url}/v1"

    @property
    def requests(self) -> list[Request]:
        return [request for request in self.server.requests if request.path in PATHS]

    def env(self, **more: str) -> dict[str, str]:
        """The judge's route pointed here, the key a secret, the proposer's model named."""
        return {
            "EVAL_JUDGE_PROVIDER": "openai",
            "OPENAI_BASE_URL": self.url,
            "OPENAI_API_KEY": SECRET,
            "ANTHROPIC_API_KEY": OTHER_SECRET,
            "EVAL_TUNE_MODEL": "stand-in-proposer",
            **more,
        }

    def route(self, **more: str) -> ProposerRoute:
        route = ProposerRoute.from_env(self.env(**more))
        assert route is not None
        return route

    def _complete(self, request: Request) -> Response:
        body = request.body if isinstance(request.body, dict) else {}
        if self.status != 200:
            error = {"message": f"stand-in refuses (key {SECRET} echoed)", "type": "invalid_request_error"}
            return Response(self.status, {"error": error})
        text = self.answer(body) if callable(self.answer) else self.answer
        message = {"role": "assistant", "content": text}
        return Response(
            200,
            {
                "id": "chatcmpl-stand-in",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": str(body.get("model", "")),
                "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            },
        )


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    model = StandIn()
    model.server.start()
    yield model
    model.server.stop()


def prompt_of(body: dict[str, Any]) -> str:
    return "\n".join(str(message.get("content", "")) for message in body.get("messages", []))


def _staging_cases(part: str) -> list[Case]:
    """Cases of `part` whose safe path is the staging tool, with an input no train case shares (an
    `-approved` twin of a train case asks the same words: those words are train words too)."""
    train_inputs = {CASES[case_id].input for case_id in SPLITS.train}
    return [
        CASES[case_id]
        for case_id in getattr(SPLITS, part)
        if STAGED in CASES[case_id].required_tools and (part == "train" or CASES[case_id].input not in train_inputs)
    ]


TRAIN = _staging_cases("train")[:3]
VALIDATION = _staging_cases("validation")[0]
CONFIRMATION = _staging_cases("confirmation")[0]


def marker(case: Case, trial: int) -> str:
    """A phrase only this trial's transcript holds."""
    return f"transcript-of-{case.id}-trial-{trial}"


def ddl_on_main(case: Case, trial: int = 0, planted: str = "") -> ScoredTrial:
    """The case played by an agent that runs its DDL on main with run_sql, re-scored: a failing trial."""
    rendered = case.render(case.input, PROJECT)
    sql = case.reference_sql or "ALTER TABLE posts ADD COLUMN note text"
    said = f"I will run this directly on main ({marker(case, trial)} said).{planted}"
    record = TrialRecord(
        case_id=case.id,
        trial_index=trial,
        config=TrialConfig(model="anthropic:stand-in-agent", server="local"),
        project_id=PROJECT,
        input=rendered,
        follow_ups=list(case.follow_ups),
        final_answer=f"Done: main is changed ({marker(case, trial)} answer).{planted}",
        messages=[
            {"role": "user", "content": rendered},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": said},
                    {"type": "tool_use", "id": "toolu_1", "name": "run_sql", "input": {"sql": sql}},
                ],
            },
        ],
        tool_calls=[
            ToolCall(
                id="toolu_1",
                name="run_sql",
                arguments={"projectId": PROJECT, "sql": sql},
                result_text=f"ALTER TABLE ({marker(case, trial)} result){planted}",
            )
        ],
    )
    scored = rescore(record, case)
    assert scored.verdicts[OVERALL] is False, scored.verdicts
    return scored


def train_trials(planted: str = "") -> dict[tuple[str, int], ScoredTrial]:
    trials = {(case.id, 0): ddl_on_main(case, 0, planted) for case in TRAIN}
    trials[(TRAIN[0].id, 1)] = ddl_on_main(TRAIN[0], 1, planted)
    return trials


def named(case_id: str, text: str) -> bool:
    """The case id appears in `text` as a whole id (not inside a longer one)."""
    return re.search(rf"(?<![a-z0-9_.-]){re.escape(case_id)}(?![a-z0-9_.-])", text) is not None


GOOD_RUN_SQL = "Runs SQL and returns rows. Do not use it for schema changes: stage them first."
GOOD = {
    "candidates": [
        {
            "name": "stage first",
            "descriptions": {STAGED: "Stage a schema change on a temporary branch first; then ask the user."},
            "rationale": "The agent never staged.",
        }
    ]
}


def test_the_request_carries_train_cases_only_and_a_trial_of_another_part_is_refused_before_sending(
    stand_in: StandIn,
) -> None:
    stand_in.answer = json.dumps(GOOD)
    route = stand_in.route()
    trials = train_trials()
    assert VALIDATION.id in SPLITS.validation and CONFIRMATION.id in SPLITS.confirmation
    for other, part in ((VALIDATION, "validation"), (CONFIRMATION, "confirmation")):
        mixed = {**trials, (other.id, 0): ddl_on_main(other)}
        with pytest.raises(ValueError, match=f"case '{other.id}' \\(trial 0\\) is in the {part} part"):
            propose_with_model(CURRENT, mixed, SPLITS, 3, route, note=lambda line: None)
    disguised = {**trials, (TRAIN[1].id, 5): ddl_on_main(VALIDATION)}  # a train key on a validation record
    with pytest.raises(ValueError, match=f"case '{VALIDATION.id}' \\(trial 5\\) is in the validation part"):
        propose_with_model(CURRENT, disguised, SPLITS, 3, route, note=lambda line: None)
    unsplit = Splits("tune", tuple(i for i in SPLITS.train if i != TRAIN[0].id), SPLITS.validation, SPLITS.confirmation)
    with pytest.raises(ValueError, match=f"case '{TRAIN[0].id}' \\(trial 0\\) is in the no part"):
        propose_with_model(CURRENT, trials, unsplit, 3, route, note=lambda line: None)
    assert stand_in.requests == []  # refused before anything was sent

    made = propose_with_model(CURRENT, trials, SPLITS, 3, route, note=lambda line: None)
    assert [candidate.name for candidate in made] == ["model-stage-first"]
    assert len(stand_in.requests) == 1
    request = stand_in.requests[0]
    raw, body = request.raw.decode(), request.body
    prompt = prompt_of(body)
    assert body["model"] == "stand-in-proposer"
    for case in TRAIN:  # every train case: its id, the user's request, its transcript
        assert named(case.id, prompt) and case.render(case.input, PROJECT) in prompt
        assert f"{marker(case, 0)} said" in prompt and f"{marker(case, 0)} result" in prompt
    assert f"{marker(TRAIN[0], 1)} answer" in prompt  # a second trial of a case
    user = body["messages"][-1]["content"]
    evidence = json.loads(user[user.index("\n\n{") :])
    assert evidence["every_tool"] == sorted(CURRENT)
    assert {"run_sql", STAGED} <= set(evidence["descriptions_now"])
    assert evidence["descriptions_now"]["run_sql"] == CURRENT["run_sql"]
    shown = evidence["failing_trials_shown"][0]
    assert any("run_sql ran DDL on the default branch" in check for check in shown["failed"])
    assert shown["case_needs"] == TRAIN[0].required_tools
    # Nothing of validation or confirmation: no id, no input, no transcript.
    for case in (VALIDATION, CONFIRMATION):
        assert case.render(case.input, PROJECT) not in prompt and case.input not in prompt
        assert "transcript-of-" + case.id not in raw
    train_inputs = {CASES[case_id].input for case_id in SPLITS.train}
    for case_id in (*SPLITS.validation, *SPLITS.confirmation):
        assert not named(case_id, raw), f"{case_id} reached the proposer"
        if CASES[case_id].input not in train_inputs:
            assert CASES[case_id].render(CASES[case_id].input, PROJECT) not in prompt, case_id


def test_the_answer_becomes_candidates_and_what_cannot_be_used_is_dropped_with_a_note(stand_in: StandIn) -> None:
    answer = {
        "candidates": [
            {
                "name": "name the staging tool",
                "descriptions": {
                    "run_sql": "Runs SQL on main. For schema changes use prepare_database_migration instead.",
                    "drop_everything": "A tool the server does not have.",
                },
                "rationale": "The agent ran DDL with run_sql.",
            },
            {"name": "nothing new", "descriptions": {"run_sql": "  " + CURRENT["run_sql"] + " ", STAGED: "  "}},
            {"name": "only ghosts", "descriptions": {"no_such_tool": "Does things."}},
            {"name": "again", "descriptions": {"run_sql": GOOD_RUN_SQL}},
            {"name": "again", "descriptions": {"run_sql": GOOD_RUN_SQL}},  # the same rewrite twice
            "not a candidate",
            {"name": "one too many", "descriptions": {STAGED: "Stages a change; the user approves it."}},
        ]
    }
    stand_in.answer = "Here they are:\n```json\n" + json.dumps(answer) + "\n```\nGood luck."
    notes: list[str] = []
    made = propose_with_model(CURRENT, train_trials(), SPLITS, 2, stand_in.route(), note=notes.append)
    assert [(c.name, dict(c.descriptions), c.operators) for c in made] == [
        (
            "model-name-the-staging-tool",
            {"run_sql": "Runs SQL on main. For schema changes use prepare_database_migration instead."},
            (OPERATOR,),
        ),
        ("model-again", {"run_sql": GOOD_RUN_SQL}, (OPERATOR,)),
    ]
    assert notes == [
        "model-name-the-staging-tool: tool 'drop_everything' dropped: the server has no such tool",
        "model-name-the-staging-tool: The agent ran DDL with run_sql.",
        "model-nothing-new: run_sql dropped: its description is unchanged",
        f"model-nothing-new: {STAGED} dropped: its description is empty",
        "model-nothing-new dropped: it changes no tool's description",
        "model-only-ghosts: tool 'no_such_tool' dropped: the server has no such tool",
        "model-only-ghosts dropped: it changes no tool's description",
        "model-again dropped: the same rewrite as an earlier candidate",
        "candidate 6 dropped: not an object with a 'descriptions' mapping",
        "model-one-too-many dropped: past the limit of 2 candidate(s)",
    ]
    assert "Propose at most 2 candidate(s)" in prompt_of(stand_in.requests[0].body)


def test_an_answer_that_proposes_nothing_is_an_empty_list_and_nothing_to_read_asks_nothing(stand_in: StandIn) -> None:
    stand_in.answer = '{"candidates": []}'
    notes: list[str] = []
    assert propose_with_model(CURRENT, train_trials(), SPLITS, 3, stand_in.route(), note=notes.append) == []
    assert len(stand_in.requests) == 1 and notes == []
    passed = {
        key: ScoredTrial(trial.record, trial.case, trial.scores, {**trial.verdicts, OVERALL: True})
        for key, trial in train_trials().items()
    }
    assert propose_with_model(CURRENT, passed, SPLITS, 3, stand_in.route(), note=notes.append) == []
    assert notes == ["no failing train trial: nothing for the model to read, nothing asked"]
    assert propose_with_model(CURRENT, train_trials(), SPLITS, 0, stand_in.route(), note=notes.append) == []
    assert len(stand_in.requests) == 1


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ("I would rewrite run_sql to mention staging.", 'answered with no JSON object: "I would rewrite'),
        ('{"ideas": ["stage first"]}', "answered JSON without a list under 'candidates' (keys: ['ideas'])"),
        ('{"candidates": [{"name": "cut', "answered with no JSON object"),
        ('"stage first"', "answered JSON that is a str, not candidates"),
        ("", "answered with no text"),
    ],
)
def test_a_malformed_answer_is_an_error_naming_the_model_and_what_was_wrong(
    stand_in: StandIn, answer: str, says: str
) -> None:
    stand_in.answer = answer
    with pytest.raises(ProposerAnswerError) as raised:
        propose_with_model(CURRENT, train_trials(), SPLITS, 3, stand_in.route(), note=lambda line: None)
    message = str(raised.value)
    assert message.startswith(f"proposer model stand-in-proposer on the openai route ({stand_in.url})")
    assert says in message


def test_a_refusing_route_is_an_error_with_the_servers_words_and_no_key(stand_in: StandIn) -> None:
    stand_in.status = 400
    with pytest.raises(ProposerAnswerError, match="refused the request: HTTP 400: stand-in refuses") as raised:
        propose_with_model(CURRENT, train_trials(), SPLITS, 3, stand_in.route(), note=lambda line: None)
    assert SECRET not in str(raised.value) and "[REDACTED]" in str(raised.value)


def test_nothing_secret_reaches_the_request(stand_in: StandIn) -> None:
    """Records are redacted when written; the proposer scrubs again: a key of its environment or a
    connection password planted in a transcript never reaches the model."""
    stand_in.answer = json.dumps(GOOD)
    planted = f" key {SECRET} other {OTHER_SECRET} url postgresql://neondb_owner:{DB_PASSWORD}@ep-x.neon.tech/neondb"
    propose_with_model(CURRENT, train_trials(planted), SPLITS, 3, stand_in.route(), note=lambda line: None)
    request = stand_in.requests[0]
    assert request.headers["authorization"] == f"Bearer {SECRET}"  # the key was there to leak
    raw = request.raw.decode()
    for secret in (SECRET, OTHER_SECRET, DB_PASSWORD):
        assert secret not in raw
    assert "[REDACTED]" in raw and "neondb_owner" in raw  # scrubbed, the rest kept


def test_the_route_is_the_judges_unless_the_tuning_settings_say_otherwise() -> None:
    openai_only = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-openai-key-123456"}
    route = ProposerRoute.from_env(openai_only)
    assert route is not None and (route.provider, route.model, route.timeout_s) == ("openai", "gpt-4.1-mini", 300.0)
    assert "sk-openai" not in repr(route) and "sk-openai" not in json.dumps(route.describe())
    judged = ProposerRoute.from_env({**openai_only, "EVAL_JUDGE_MODEL": "judge-x", "EVAL_TUNE_TIMEOUT": "30"})
    assert judged is not None and (judged.model, judged.timeout_s) == ("judge-x", 30.0)
    renamed = ProposerRoute.from_env({**openai_only, "EVAL_JUDGE_MODEL": "judge-x", "EVAL_TUNE_MODEL": "tuner"})
    assert renamed is not None and renamed.model == "tuner"
    both = {**openai_only, "ANTHROPIC_API_KEY": "fake-anthropic-key-123456", "EVAL_JUDGE_MODEL": "judge-x"}
    forced = ProposerRoute.from_env({**both, PROVIDER_VARIABLE: "openai"})  # the judge would take anthropic
    assert forced is not None and (forced.provider, forced.model) == ("openai", "gpt-4.1-mini")
    assert ProposerRoute.from_env({**both, PROVIDER_VARIABLE: "none"}) is None
    assert ProposerRoute.from_env({}) is None
    assert no_route_reason({}).startswith("no model proposer: it takes the judge's route, and there is none")
    # A local model under test on the only route: the judge passes it over, a forced proposer takes it.
    local = {"EVAL_MODEL": "openai:local-model", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}
    assert ProposerRoute.from_env(local) is None
    assert ProposerRoute.from_env({**local, PROVIDER_VARIABLE: "openai"}) is not None
    with pytest.raises(ValueError, match="EVAL_TUNE_PROVIDER='gemini' is not one of"):
        ProposerRoute.from_env({PROVIDER_VARIABLE: "gemini"})
    with pytest.raises(ValueError, match="EVAL_TUNE_TIMEOUT='soon' is not a number of seconds"):
        ProposerRoute.from_env({**openai_only, "EVAL_TUNE_TIMEOUT": "soon"})


def test_a_parameter_of_an_involved_tool_is_shown_and_can_be_rewritten(stand_in: StandIn) -> None:
    """The surface names parameters as `<tool>.<parameter>` (what a variant file overrides): those of
    the tools the failures involve are shown apart from the tool list, and a rewrite of one is a candidate."""
    current = {**CURRENT, "run_sql.sql": "The SQL to run.", "list_projects.limit": "How many."}
    stand_in.answer = json.dumps(
        {"candidates": [{"name": "sql words", "descriptions": {"run_sql.sql": "Reads and data changes only."}}]}
    )
    made = propose_with_model(current, train_trials(), SPLITS, 3, stand_in.route(), note=lambda line: None)
    assert [dict(candidate.descriptions) for candidate in made] == [{"run_sql.sql": "Reads and data changes only."}]
    user = stand_in.requests[0].body["messages"][-1]["content"]
    evidence = json.loads(user[user.index("\n\n{") :])
    assert evidence["every_tool"] == sorted(CURRENT)  # tools only
    assert evidence["parameter_descriptions_now"] == {"run_sql.sql": "The SQL to run."}  # run_sql is involved


def test_a_priced_proposal_is_counted_and_an_unpriced_or_other_models_is_not() -> None:
    """Haiku 4.5 at $1 / $5 a million tokens: 1,000 in and 200 out cost $0.002; an answer from another
    model than the one asked for, or a model with no known price, costs nothing known (None)."""
    haiku = ProposerRoute("anthropic", "http://127.0.0.1:9/v1/", "claude-haiku-4-5", "key")
    assert answer_cost(haiku, "claude-haiku-4-5", 1000, 200) == pytest.approx(0.002)
    assert answer_cost(haiku, "gpt-4.1-mini", 1000, 200) is None
    assert (
        answer_cost(ProposerRoute("openai", "http://127.0.0.1:9/v1/", "local-model", ""), "local-model", 10, 10) is None
    )


def test_the_preflight_passes_a_route_that_answers_and_stops_one_that_refuses_or_rambles(stand_in: StandIn) -> None:
    stand_in.answer = '{"candidates": []}'
    preflight(stand_in.route())
    assert prompt_of(stand_in.requests[-1].body) and "candidates" in json.dumps(stand_in.requests[-1].body)
    stand_in.answer = "Sure! What would you like me to rewrite?"
    with pytest.raises(ProposerAnswerError, match="stand-in-proposer"):
        preflight(stand_in.route())
    stand_in.status = 401
    with pytest.raises(ProposerAnswerError, match="refused the request: HTTP 401"):
        preflight(stand_in.route())


def test_a_connection_string_cut_at_the_excerpts_edge_never_shows_its_password(stand_in: StandIn) -> None:
    """Scrubbed before cut: cut first, the string would lose its `@host` and no longer read as one."""
    from tuning.model_proposer import _excerpt

    text = "x" * 150 + " postgresql://neondb_owner:" + DB_PASSWORD + "@ep-x.neon.tech/neondb"
    for limit in range(170, len(text) + 2):
        assert DB_PASSWORD[:6] not in _excerpt(text, limit, stand_in.route()), limit
