"""Recognising a tool call a model wrote as text that its server did not parse (issue 18 item 1, issue 20 item 8)."""

from __future__ import annotations

from harness.models.textcalls import describe, text_tool_calls
from tests.fakes.llama_replay import answer

OFFERED = ("run_sql", "get_database_tables", "describe_table_schema")


def recorded_text(name: str) -> str:
    """The text of a recorded reply, on either protocol."""
    _, body = answer(name)
    if "choices" in body:
        return str(body["choices"][0]["message"]["content"] or "")
    return "\n".join(block["text"] for block in body["content"] if block["type"] == "text")


def test_the_recorded_fenced_json_calls_are_recognised_on_both_protocols() -> None:
    for name in ("openai_fenced_call", "anthropic_fenced_call"):
        text = recorded_text(name)
        calls = text_tool_calls(text, OFFERED)
        assert [call.name for call in calls] == ["run_sql"], (name, text)
        assert calls[0].form == "fenced json" and calls[0].arguments == {"sql": "SELECT count(*) FROM posts"}
    invented = text_tool_calls(recorded_text("openai_fenced_invented_call"), OFFERED)
    assert [call.name for call in invented] == ["count_posts"]
    assert "count_posts (not offered)" in describe(invented, OFFERED)


def test_recorded_answers_that_only_look_like_calls_are_not_calls() -> None:
    # A fenced object cut mid-way, Python that builds a dict with single quotes, a `<tool_call name=...>`
    # tag inside prose, plain chatter: all real replies of the same model, none a call.
    for name in (
        "openai_fenced_not_a_call",
        "openai_text_tool_call",
        "anthropic_text_tool_call",
        "openai_tool_choice_object",
        "openai_tool_call",
        "anthropic_tool_use",
    ):
        assert text_tool_calls(recorded_text(name), OFFERED) == [], name


def test_template_markers_bare_json_and_the_openai_shape_are_calls_too() -> None:
    marked = 'Sure.\n<tool_call>\n{"name": "run_sql", "arguments": {"sql": "SELECT 1"}}\n</tool_call>'
    assert [(c.name, c.form) for c in text_tool_calls(marked, OFFERED)] == [("run_sql", "<tool_call> markers")]
    bare = '{"name": "get_database_tables", "parameters": {"projectId": "p"}}'
    assert [(c.name, c.form) for c in text_tool_calls(bare, OFFERED)] == [("get_database_tables", "bare json")]
    wire = '```json\n[{"type": "function", "function": {"name": "run_sql", "arguments": "{}"}}]\n```'
    assert [c.name for c in text_tool_calls(wire, OFFERED)] == ["run_sql"]


def test_an_answer_that_shows_json_is_not_a_call() -> None:
    answers = [
        "There are 200 posts.",
        '```json\n{"name": "Ada", "email": "ada@example.com", "arguments": 3}\n```',  # a row, not a call
        '```json\n{"name": "run_sql"}\n```',  # no arguments: not the shape of a call
        "```sql\nSELECT count(*) FROM posts;\n```",
        "{not json at all",
    ]
    for text in answers:
        assert text_tool_calls(text, OFFERED) == [], text
