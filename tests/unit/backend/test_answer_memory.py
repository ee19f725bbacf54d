"""No answer starts with another answer in its memory.

A correct answer carrying a unique token runs first; then, in the same worker, an answer reads every
readable anonymous region of its own memory (the heap, the arenas, the stack) and every object the
collector tracks, and reports each token it finds. It must find none of the earlier answer's, in
root's sandbox and in a normal user's. It must find its own control token, which exists only as a
constant compiled from its source (two adjacent literals), so that a scan that reads nothing cannot
pass. `test_memory_attack.py` runs the whole attack: copying and running an earlier correct answer.
"""

from __future__ import annotations

import os
import textwrap
import uuid

import pytest

from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.pool import Job, Sandbox
from tests.support.nonroot import NonRoot
from tests.support.params import sandbox_params

PREFIX = "sweetflow-memory-probe-"
LIMITS = {"workers": 1, "call_timeout_s": 20.0, "task_timeout_s": 30.0}

SCAN = textwrap.dedent(
    """
    import ctypes, gc, re

    # Split, so that the prefix is never followed by a token where this source lies in memory.
    PATTERN = re.compile(("sweetflow-memory-" + "probe-").encode() + rb"[0-9a-f]{32}")
    CONTROL = "sweetflow-memory-probe-" "$control"

    def scan():
        found = set()
        with open("/proc/self/maps") as maps:
            regions = [line.split() for line in maps]
        for fields in regions:
            if fields[1][0] != "r" or len(fields) > 5 and fields[5] not in ("[heap]", "[stack]"):
                continue
            lo, hi = (int(v, 16) for v in fields[0].split("-"))
            try:
                found.update(m.decode() for m in PATTERN.findall(ctypes.string_at(lo, hi - lo)))
            except Exception:
                pass
        for obj in gc.get_objects():
            items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
            found.update(m for s in items if isinstance(s, str) for m in re.findall(PATTERN.pattern.decode(), s))
        return sorted(found)
    """
)


def correct_answer(token: str) -> str:
    """An answer of a usual length (ColBench's references run to a few hundred bytes or more), with the
    token at its end, where the start of a freed block the allocator reuses does not reach."""
    steps = "".join(f"    # step {i}: double the input, as the task asks, one careful comment\n" for i in range(24))
    return f"def f(x):\n{steps}    return x * 2  # {token}\n"


def tokens_after_a_correct_answer(token: str, control: str) -> dict:
    """Score a correct answer, then the scan, in one worker: what the scan found, and how each ended."""
    with Sandbox(sandbox_params(**LIMITS)) as sb:
        honest, scan = sb.run(
            [Job(correct_answer(token), ["f(21)"]), Job(SCAN.replace("$control", control), ["scan()"])]
        )
    return {"honest": honest.outputs[0], "status": scan.status, "found": plaindata.loads(scan.outputs[0] or "[]")}


@pytest.mark.parametrize("user", ["root", "non-root"])
def test_an_answer_finds_no_earlier_answer_in_its_memory(user: str, nonroot: NonRoot | str):
    token, control = (PREFIX + uuid.uuid4().hex for _ in range(2))
    kwargs = {"token": token, "control": control.removeprefix(PREFIX)}
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip("the root sandbox needs root")
        result = tokens_after_a_correct_answer(**kwargs)
    else:
        if isinstance(nonroot, str):
            pytest.skip(nonroot)
        result, left = nonroot.call(f"{__name__}:{tokens_after_a_correct_answer.__name__}", "/", **kwargs)
        assert left == []
    assert plaindata.loads(result["honest"]) == 42 and result["status"] == "ok"
    assert control in result["found"]  # the scan reads its own memory
    assert token not in result["found"]
    assert result["found"] == [control]
