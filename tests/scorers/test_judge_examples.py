"""The hand-labelled judge examples: the bundled set covers what it must; bad files are named."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from scorers.judge_examples import BUNDLED_EXAMPLES, ExamplesError, examples_path, load_examples

REQUIRED_TRAPS = ("staged_vs_applied", "wrong_target", "cancelled_vs_applied", "ids_and_layout", "failed_change")
GOOD = """\
  - id: {id}
    label: C
    traps: [read_answer]
    conversation: ["How many posts?"]
    expected: "200 posts."
    submission: "There are 200 posts."
    why: same number
"""


def test_the_bundled_set_is_large_and_covers_every_choice_and_trap() -> None:
    examples = load_examples(BUNDLED_EXAMPLES)
    assert len(examples) >= 60
    labels = Counter(example.label for example in examples)
    assert set(labels) == {"A", "B", "C", "D", "E"} and min(labels.values()) >= 8
    traps: Counter[str] = Counter(trap for example in examples for trap in example.traps)
    assert all(traps[trap] >= 5 for trap in REQUIRED_TRAPS), traps
    # every trap is shown both failed (D) and passed, so a judge cannot score well by always
    # answering D whenever a trap word appears
    for trap in ("wrong_target", "failed_change", "ids_and_layout"):
        trapped = {example.label for example in examples if trap in example.traps}
        assert len(trapped) >= 2, (trap, trapped)
    assert len({example.submission for example in examples}) == len(examples)


def test_the_dataset_path_comes_from_the_environment(tmp_path: Path) -> None:
    assert examples_path({}) == BUNDLED_EXAMPLES
    assert examples_path({"EVAL_JUDGE_DATASET": str(tmp_path)}) == tmp_path


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "version: 1\nexamples:\n" + GOOD.format(id="ok-one") + GOOD.format(id="ok-one").replace("C", "F", 1),
            "example #2 ('ok-one'): label: Input should be 'A', 'B', 'C', 'D' or 'E'",
        ),
        (
            "version: 1\nexamples:\n" + GOOD.format(id="ok-two").replace("read_answer", "vibes"),
            "example #1 ('ok-two'): traps.0: Input should be",
        ),
        (
            "version: 1\nexamples:\n" + GOOD.format(id="ok-three").replace("    why: same number\n", ""),
            "example #1 ('ok-three'): why: Field required",
        ),
        (
            "version: 1\nexamples:\n" + GOOD.format(id="ok-four").replace('["How many posts?"]', "[]"),
            "example #1 ('ok-four'): conversation: List should have at least 1 item",
        ),
        ("version: 2\nexamples: []\n", "expected `version: 1`"),
        ("version: 1\nexamples:\n  - [", "not valid YAML"),
    ],
)
def test_a_bad_example_names_the_file_and_the_example(tmp_path: Path, body: str, problem: str) -> None:
    path = _write(tmp_path, "bad.yaml", body)
    with pytest.raises(ExamplesError) as raised:
        load_examples(path)
    assert str(raised.value).startswith(f"{path}: ") and problem in str(raised.value)


def test_duplicate_ids_across_files_and_empty_inputs(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", "version: 1\nexamples:\n" + GOOD.format(id="twice"))
    second = _write(tmp_path, "b.yaml", "version: 1\nexamples:\n" + GOOD.format(id="twice"))
    with pytest.raises(ExamplesError, match=f"{second}: example 'twice': id already used in .*a.yaml"):
        load_examples(tmp_path)
    with pytest.raises(ExamplesError, match="no such file or folder"):
        load_examples(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ExamplesError, match=r"no \*\.yaml files"):
        load_examples(empty)
    with pytest.raises(ExamplesError, match="no labelled examples"):
        load_examples(_write(empty, "none.yaml", "version: 1\nexamples: []\n"))
