"""Trajectory lines in ColBench's official shape (the official offline data's), built for tests."""

from __future__ import annotations

from sweetflow.backend.tasks.colbench import to_official_row


def official_line(task: dict, answer: str = "def f(): pass", reward: float | None = 0.0, **changes) -> dict:
    """A three-turn dialogue on `task` (a question, the human's reply, the answer), as a model played
    it (the agent turns carry `input` and `output`)."""
    history = [
        {"role": "assistant", "content": "What should it return?", "input": "<prompt 1>", "output": "What ...?"},
        {"role": "user", "content": "I don't know."},
        {"role": "assistant", "content": f"I WANT TO ANSWER: {answer}", "input": "<prompt 2>", "output": answer},
    ]
    return {"task": to_official_row(task), "dialogue_history": history, "answer": answer, "reward": reward, **changes}
