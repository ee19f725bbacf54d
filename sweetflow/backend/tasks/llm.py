"""Backend tasks written by an LLM from passages of a local text corpus (the paper's method).

For each passage the model invents a person and the small function they need, and answers with a
ColBench row as JSON. A row is kept only if it parses, the reference is a top-level function of at
most 50 lines, every test is a call of that function, and the reference passes its own tests in the
sandbox twice with the same outputs. Every rejection is counted by reason.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from sweetflow.backend.params import LlmTasksParams
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.core.errors import InputError
from sweetflow.core.inputs import ImportRowError
from sweetflow.endpoint import ChatClient, EndpointError

N_TESTS = 10
MAX_LINES = 50

WRITER_PROMPT = """\
You write tasks for a benchmark in which an assistant must talk with a person before it can write \
a Python function for them. Read the passage below and imagine someone it brings to mind — their \
work, hobby or situation — who needs one small Python function with rules only they know.

Reply with a single JSON object and nothing else. Keys:
- "problem_description": the person's request, in the first person and deliberately vague: it must \
not state the exact numbers, thresholds, names or rules the function uses. End it with the sentence \
"The signature of the function is: def NAME(ARGS)".
- "ground_truth": the complete Python function, at most 50 lines, standard library only, \
deterministic, returning plain data (numbers, strings, booleans, lists, dicts), never None.
- "test_cases": an object with keys "test1" to "test10", each a call of the function with literal \
arguments, chosen so that getting any of the hidden rules wrong changes at least one result.

Passage:
{passage}
"""

JSON_RE = re.compile(r"\{.*\}", re.S)
REJECTED_FLAGS = ("reference_error", "call_error", "nondeterministic", "none_output", "self_unequal")


def read_passages(path: Path | str, min_chars: int = 200) -> list[str]:
    """Paragraphs of a text file (separated by blank lines), short ones joined to the next."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"tasks.llm.corpus: {path} is not a file")
    passages, current = [], ""
    for para in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
        current = f"{current}\n\n{para.strip()}".strip()
        if len(current) >= min_chars:
            passages.append(current)
            current = ""
    if current:
        passages.append(current)
    if not passages:
        raise InputError(f"tasks.llm.corpus: {path} holds no text")
    return passages


def parse_task(text: str) -> tuple[dict | None, str | None]:
    """A task record from the model's reply, or None and the reason it can't be one."""
    match = JSON_RE.search(text)
    if not match:
        return None, "unparseable"
    try:
        row = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None, "unparseable"
    if not isinstance(row, dict):
        return None, "unparseable"
    try:
        task = task_from_row(row)
    except ImportRowError:
        return None, "missing_fields"
    try:
        tree = ast.parse(task["ground_truth"])
    except SyntaxError:
        return None, "reference_syntax"
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if task["function_name"] not in functions:
        return None, "no_function"
    if len(task["ground_truth"].strip().splitlines()) > MAX_LINES:
        return None, "reference_too_long"
    if len(task["test_cases"]) != N_TESTS:
        return None, "wrong_test_count"
    if not all(_calls(call, task["function_name"]) for call in task["test_cases"]):
        return None, "test_not_a_call"
    task["task_id"] = task["task_id"].replace("colbench-", "llm-", 1)
    task["family"] = "llm"
    return task, None


def _calls(expression: str, name: str) -> bool:
    """Whether `expression` is exactly one call of the function `name`."""
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


@dataclass
class LlmTaskResult:
    tasks: list[dict] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    requests: int = 0


def generate_llm_tasks(n: int, params: LlmTasksParams, sandbox: Sandbox, seen: set[str], desc: str) -> LlmTaskResult:
    """Ask for tasks passage by passage until `n` are kept or `params.max_requests` are spent.

    `seen` holds the references already kept (across splits), so no task is kept twice.
    """
    passages = read_passages(params.corpus)
    client = ChatClient(params.endpoint)
    result = LlmTaskResult()
    bar = tqdm(total=n, desc=desc, unit="task")

    def ask(passage: str) -> str | Exception:
        try:
            reply = client.complete(
                [{"role": "user", "content": WRITER_PROMPT.format(passage=passage)}],
                temperature=params.temperature,
                max_tokens=params.max_new_tokens,
            )
            return reply.text
        except EndpointError as e:
            return e

    with ThreadPoolExecutor(params.endpoint.concurrency) as pool:
        while len(result.tasks) < n and result.requests < params.max_requests:
            batch = min(params.endpoint.concurrency, params.max_requests - result.requests)
            chosen = [passages[(result.requests + i) % len(passages)] for i in range(batch)]
            result.requests += batch
            drafts = []
            for reply in pool.map(ask, chosen):
                if isinstance(reply, Exception):
                    result.rejected["endpoint_error"] += 1
                    continue
                task, reason = parse_task(reply)
                if reason:
                    result.rejected[reason] += 1
                elif task["ground_truth"] in seen:
                    result.rejected["duplicate"] += 1
                else:
                    seen.add(task["ground_truth"])
                    drafts.append(task)
            for task, check in zip(drafts, check_references(drafts, sandbox)):
                bad = [f for f in check.flags if f in REJECTED_FLAGS]
                if bad:
                    result.rejected[bad[0]] += 1
                elif len(result.tasks) < n:
                    result.tasks.append(task)
                    bar.update()
    bar.close()
    return result
