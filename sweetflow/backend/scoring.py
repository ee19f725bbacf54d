"""Backend scoring by ColBench's rules, with every piece of code run in the sandbox.

A test passes when the answer's output equals the reference's output and the reference's output is
not None; a task's score is the fraction of its tests passed, success is all of them. The
reference's outputs are computed once per task (`check_references`) and stored with the task.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from sweetflow.backend.params import ScoringRules
from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.pool import Job, Sandbox
from sweetflow.backend.verdict import COMPARISON_ERRORS, passes_test

# Strings for which ColBench's evaluator scores a piece of code 0 without running it (docs/benchmark.md).
# The sandbox contains such code, so answers are filtered only when ScoringRules.answer_filter says so;
# references it would reject are always flagged.
OFFICIAL_FILTER = (
    "import os",
    "from os",
    "import sys",
    "from sys",
    "sudo",
    "transformers",
    "exit(",
    "quit(",
    "argparse",
)
FLAGS = ("reference_error", "call_error", "nondeterministic", "none_output", "self_unequal", "official_filter")

FENCE_RE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S | re.I)


def extract_code(answer: str) -> str:
    """The code in an answer: its first fenced block if it has one, else the whole text."""
    match = FENCE_RE.search(answer)
    return match.group(1) if match else answer


@dataclass
class ReferenceCheck:
    expected: list[str | None]
    reference_passes: int
    flags: list[str]


def check_references(
    tasks: list[dict], sandbox: Sandbox, desc: str | None = None, rules: ScoringRules = ScoringRules()
) -> list[ReferenceCheck]:
    """Run each reference twice; keep the first run's outputs as expected, flag anything odd."""
    jobs = [Job(t["ground_truth"], t["test_cases"], _namespace(rules)) for t in tasks]
    runs = sandbox.run(jobs + jobs, desc=desc)
    first, second = runs[: len(jobs)], runs[len(jobs) :]
    checks = []
    for task, a, b in zip(tasks, first, second):
        flags = []
        if a.status != "ok":
            flags.append("reference_error")
        elif any(e is not None for e in a.call_errors):
            flags.append("call_error")
        if a.outputs != b.outputs:
            flags.append("nondeterministic")
        decoded = [_safe_loads(o) for o in a.outputs if o is not None]
        if any(o is None for o in decoded):
            flags.append("none_output")
        if any(o is not None and not _equal_to_itself(o) for o in decoded):
            flags.append("self_unequal")
        if refused_by_filter(task["ground_truth"]):
            flags.append("official_filter")
        passes = sum(passes_test(e, o) for e, o in zip(a.outputs, b.outputs))
        checks.append(ReferenceCheck(a.outputs, passes, flags))
    return checks


def _safe_loads(text: str) -> object:
    try:
        return plaindata.loads(text)
    except plaindata.EncodingError:
        return plaindata.Opaque("malformed")


def _equal_to_itself(value: object) -> bool:
    try:
        return bool(value == plaindata.loads(plaindata.dumps(value)))
    except COMPARISON_ERRORS:
        return False


@dataclass
class AnswerScore:
    tests_passed: float
    success: bool
    passed: list[bool]
    status: str
    failures: Counter = field(default_factory=Counter)
    outputs: list[str | None] = field(default_factory=list)  # each test call's output, None where it raised


def score_answers(
    answers: list[str],
    expected: list[list[str | None]],
    calls: list[list[str]],
    sandbox: Sandbox,
    desc: str | None = None,
    rules: ScoringRules = ScoringRules(),
) -> list[AnswerScore]:
    """Score each answer's code against its task's expected outputs."""
    codes = [extract_code(a) for a in answers]
    filtered = [rules.answer_filter and refused_by_filter(code) for code in codes]
    jobs = [Job(code, c, _namespace(rules)) for code, c, f in zip(codes, calls, filtered) if not f]
    runs = iter(sandbox.run(jobs, desc=desc))
    scores = []
    for exp, refused in zip(expected, filtered):
        if refused:
            scores.append(AnswerScore(0.0, False, [False] * len(exp), "filtered", outputs=[None] * len(exp)))
            continue
        run = next(runs)
        passed = [passes_test(e, o) for e, o in zip(exp, run.outputs)]
        fraction = sum(passed) / max(len(exp), 1)
        scores.append(
            AnswerScore(
                fraction, fraction == 1.0 and len(exp) > 0, passed, run.status, run.failure_kinds(), run.outputs
            )
        )
    return scores


def refused_by_filter(code: str) -> bool:
    return any(s in code for s in OFFICIAL_FILTER)


def _namespace(rules: ScoringRules) -> str:
    return "function" if rules.function_namespace else "module"


def summarize(scores: list[AnswerScore]) -> dict:
    """The backend metrics: mean fraction of tests passed, success rate, count, failures by kind."""
    n = len(scores)
    failures = Counter()
    for s in scores:
        failures.update(s.failures)
    return {
        "tests_passed": sum(s.tests_passed for s in scores) / n if n else 0.0,
        "success_rate": sum(s.success for s in scores) / n if n else 0.0,
        "count": n,
        "sandbox_failures": dict(sorted(failures.items())),
    }
