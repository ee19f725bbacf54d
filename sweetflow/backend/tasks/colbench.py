"""Import and export of ColBench's official backend JSONL shape.

A row is `{"problem_description": str, "ground_truth": str, "test_cases": {"test1": str, ...},
"hidden_information": str (optional, equal to ground_truth)}`. Rows become task records of
`sweetflow.backend.tasks.table.TASK_SCHEMA`; any bad row stops the import with the file, line and field.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

from sweetflow.core.inputs import FileLimits, Row, content_id, iter_jsonl

# The start of a signature, `def name(`; `signature_of` finds where it ends without a regex, for a
# regex over the whole signature (`def\s+\w+\s*\(.*?\)\s*:?\s*$`) retries every `def` against the
# rest of the text: 40 s for a 240 KB description of "def a(" repeated.
SIGNATURE_START = re.compile(r"def\s+\w+\s*\(")


def task_from_row(row: dict, path: Path | str = "<row>", line: int = 0) -> dict:
    """One official row (or a trajectory's `task`) as a task record."""
    fields = Row(row, path, line)
    description = fields.text("problem_description")
    reference = fields.text("ground_truth")
    tests = row.get("test_cases")
    if isinstance(tests, str):  # some dumps store the dict JSON-encoded
        try:
            tests = json.loads(tests)
        except json.JSONDecodeError:
            raise fields.error("test_cases", "a string that is not a JSON object") from None
    if not isinstance(tests, dict) or not tests:
        raise fields.error("test_cases", f"expected an object test1..testN, got {tests!r:.80}")
    bad = [k for k, v in tests.items() if not isinstance(v, str)]
    if bad:
        raise fields.error(f"test_cases.{bad[0]}", "expected a call expression string")
    calls = [tests[k] for k in sorted(tests, key=_test_order)]
    function_name, signature = _function_of(reference, description)
    return {
        "task_id": task_id_of(reference, calls),
        "family": "colbench",
        "function_name": function_name,
        "signature": signature,
        "problem_description": description,
        "ground_truth": reference,
        "template": "",
        "test_cases": calls,
        "facts": [],
    }


def task_id_of(reference: str, calls: list[str]) -> str:
    """A task's id from its content, the reference and the test calls in order: the same task has the
    same id in every file that holds it (the official train file, a trajectory line's `task`)."""
    return content_id("colbench", reference, "\n".join(calls))


def _test_order(key: str) -> tuple[int, str]:
    digits = re.sub(r"\D", "", key)
    return (int(digits) if digits else 0, key)


def signature_of(description: str) -> str | None:
    """The `def name(...)` a description ends with (a colon after it allowed), from its first `def`;
    None if it ends otherwise. Linear time in the description."""
    text = description.strip()
    body = text[:-1].rstrip() if text.endswith(":") else text
    if not body.endswith(")"):
        return None
    # The parenthesis that ends the text closes the signature: any `def name(` before it starts one.
    match = SIGNATURE_START.search(body, 0, len(body) - 1)
    return body[match.start() :] if match else None


# A file of trajectories holds each task many times (one per episode): its reference is parsed once.
@functools.lru_cache(maxsize=4096)
def _function_of(reference: str, description: str) -> tuple[str, str]:
    """Name and signature of the function the task asks for (the first top-level def)."""
    signature = signature_of(description)
    try:
        tree = ast.parse(reference)
        fn = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        name = fn.name
    except (SyntaxError, StopIteration, ValueError):
        name = re.match(r"def\s+(\w+)", signature).group(1) if signature else ""
    return name, signature or f"def {name}(...)"


def read_backend_jsonl(path: Path | str, limit: int | None = None, bounds: FileLimits | None = None) -> list[dict]:
    return [task_from_row(row, path, line) for line, row in iter_jsonl(path, limit, bounds)]


def to_official_row(task: dict) -> dict:
    return {
        "problem_description": task["problem_description"],
        "ground_truth": task["ground_truth"],
        "hidden_information": task["ground_truth"],
        "test_cases": {f"test{i + 1}": call for i, call in enumerate(task["test_cases"])},
    }
