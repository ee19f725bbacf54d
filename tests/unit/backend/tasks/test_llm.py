"""Tasks written by an LLM: parsing, validation in the sandbox, and a real endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweetflow.backend.params import LlmTasksParams
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.tasks.llm import generate_llm_tasks, parse_task, read_passages
from tests.support.params import endpoint_params, sandbox_params

GOOD = {
    "problem_description": "I grade my pottery class. The signature of the function is: def grade(points)",
    "ground_truth": "def grade(points):\n    return 'pass' if points >= 37 else 'fail'",
    "test_cases": {f"test{i}": f"grade({30 + i})" for i in range(1, 11)},
}


def reply(row: dict) -> str:
    return "Here is the task:\n```json\n" + json.dumps(row) + "\n```"


def test_a_good_reply_becomes_a_task():
    task, reason = parse_task(reply(GOOD))
    assert reason is None and task["function_name"] == "grade" and task["family"] == "llm"
    assert task["task_id"].startswith("llm-") and len(task["test_cases"]) == 10


@pytest.mark.parametrize(
    "text, reason",
    [
        ("I cannot do that.", "unparseable"),
        (reply({**GOOD, "ground_truth": 3}), "missing_fields"),
        (reply({**GOOD, "ground_truth": "def grade(points) return 1"}), "reference_syntax"),
        (reply({**GOOD, "ground_truth": "x = 1"}), "no_function"),
        (reply({**GOOD, "test_cases": {"test1": "grade(1)"}}), "wrong_test_count"),
        (
            reply({**GOOD, "test_cases": {**GOOD["test_cases"], "test3": "__import__('os').getcwd()"}}),
            "test_not_a_call",
        ),
        (reply({**GOOD, "test_cases": {**GOOD["test_cases"], "test4": "grade(1); grade(2)"}}), "test_not_a_call"),
    ],
)
def test_bad_replies_are_rejected_with_their_reason(text, reason):
    assert parse_task(text) == (None, reason)


def test_passages_are_paragraphs_of_the_corpus(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("short.\n\n" + "A long paragraph. " * 20 + "\n\nlast")
    passages = read_passages(corpus)
    assert len(passages) == 2 and passages[0].startswith("short.")


def test_real_endpoint_tasks_are_validated_and_rejections_counted(openai_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # params allow a corpus under data/sources/ only: the tasks stage's dependency
    corpus = Path("data/sources/corpus.txt")
    corpus.parent.mkdir(parents=True)
    corpus.write_text("The library lends books and DVDs; late returns pay a fine per day.\n\n" * 3)
    params = LlmTasksParams(
        endpoint=endpoint_params(base_url=openai_server.base_url, model=openai_server.model_name, concurrency=2),
        corpus=corpus,
        temperature=0.8,
        max_new_tokens=64,
        max_requests=4,
    )
    with Sandbox(sandbox_params(workers=1)) as sandbox:
        result = generate_llm_tasks(2, params, sandbox, set(), "test")
    # A tiny random model can't write a task: every request is spent and rejected, for a reason.
    assert result.requests == 4 and result.tasks == []
    assert sum(result.rejected.values()) == 4 and set(result.rejected) <= {"unparseable", "missing_fields"}


def test_references_that_fail_in_the_sandbox_are_rejected(tmp_path, monkeypatch):
    """The validation half, fed by a stand-in writer (the one fake here: a model that writes
    exactly these rows can't be had offline)."""
    rows = [
        GOOD,
        {**GOOD, "ground_truth": "import random\ndef grade(points):\n    return random.random()"},
        {**GOOD, "ground_truth": "def grade(points):\n    return None"},
        {**GOOD, "ground_truth": "def grade(points):\n    return 1 / (points - 33)"},
    ]
    replies = iter(reply(r) for r in rows)

    class Writer:
        def __init__(self, endpoint):
            pass

        def complete(self, messages, **kw):
            return type("Completion", (), {"text": next(replies)})()

    monkeypatch.setattr("sweetflow.backend.tasks.llm.ChatClient", Writer)
    monkeypatch.chdir(tmp_path)
    corpus = Path("data/sources/c.txt")
    corpus.parent.mkdir(parents=True)
    corpus.write_text("passage " * 40)
    params = LlmTasksParams(
        endpoint=endpoint_params(base_url="http://127.0.0.1:9/v1", concurrency=1),
        corpus=corpus,
        temperature=0.8,
        max_new_tokens=1500,
        max_requests=4,
    )
    with Sandbox(sandbox_params(workers=1)) as sandbox:
        result = generate_llm_tasks(4, params, sandbox, set(), "test")
    assert [t["ground_truth"] for t in result.tasks] == [GOOD["ground_truth"]]
    assert result.rejected == {"nondeterministic": 1, "none_output": 1, "call_error": 1}
