"""An answer that never names its task's reference, but looks for it in its own memory.

A child forked from the worker that read earlier jobs would inherit the bytes of every one, freed or
not. This answer reads /proc/self/maps, copies each anonymous readable region with ctypes, finds
`def <name>(` of a function other than itself, runs that and returns what it returns. Each child is
forked by a template that has never held a job, so even within one pool that has just run the
references it finds none of them (it found some before the template); `sweetflow score` also runs
references and answers in separate pools. Both hold in root's sandbox and in a normal user's.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references, score_answers
from sweetflow.backend.tasks.colbench import task_from_row
from sweetflow.scorefile import score_file
from tests.support.nonroot import NonRoot
from tests.support.params import backend_section, sandbox_params
from tests.support.project import ROOT

SAMPLE = ROOT / "tests/data/colbench-sample/backend_test_first100.jsonl"
ROWS = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:40]]

SCRAPER = textwrap.dedent(
    """
    import ctypes, json

    MARK = "memory-scraper-" + "self"  # split, so that the marker is not in this source as one word
    found = {}

    def candidates(data, needle):
        at = data.find(needle)
        while at != -1:
            raw = data[at:at + 20000].split(b"\\0")[0].decode("utf-8", "replace")
            yield raw  # the code as a str object held it
            end = 0
            while True:  # the code as the JSON job line held it: up to the closing quote
                end = raw.find('"', end + 1)
                if end == -1 or raw[end - 1] != "\\\\":
                    break
            if end > 0:
                try:
                    yield json.loads('"' + raw[:end] + '"')
                except ValueError:
                    pass
            at = data.find(needle, at + 1)

    def search(name):
        if name in found:
            return found[name]
        found[name] = None
        needle = ("def " + name + "(").encode()
        with open("/proc/self/maps") as maps:
            regions = [line.split() for line in maps]
        for fields in regions:
            if fields[1][0] != "r" or len(fields) > 5 and fields[5] != "[heap]":
                continue  # anonymous memory only: the interpreter's heap and arenas
            lo, hi = (int(v, 16) for v in fields[0].split("-"))
            try:
                data = ctypes.string_at(lo, hi - lo)
            except Exception:
                continue
            for code in candidates(data, needle):
                # Its own copies: the whole answer carries the marker; its last function alone (the
                # worker may hold it apart) calls the search.
                if MARK in code or "memory-scraper-" in code or "fn = sea" + "rch(" in code:
                    continue
                space = {}
                try:
                    exec(code, space)
                except BaseException:
                    continue
                if callable(space.get(name)):
                    found[name] = space[name]
                    return found[name]
        return None

    def NAME(*args, **kwargs):
        fn = search("NAME")
        return fn(*args, **kwargs) if fn else None
    """
)


def scraper(name: str) -> str:
    return SCRAPER.replace("NAME", name)


def scraper_successes_in_one_pool() -> int:
    tasks = [task_from_row(r) for r in ROWS]
    with Sandbox(sandbox_params(workers=1)) as sandbox:
        expected = [c.expected for c in check_references(tasks, sandbox)]
        scores = score_answers(
            [scraper(t["function_name"]) for t in tasks], expected, [t["test_cases"] for t in tasks], sandbox
        )
    return sum(s.success for s in scores)


def scraper_success_rate_by_score_file(workdir: str, workers: int) -> float:
    rows = Path(workdir) / "trajectories.jsonl"
    rows.write_text(
        "".join(json.dumps({"task": r, "answer": scraper(task_from_row(r)["function_name"])}) + "\n" for r in ROWS)
    )
    summary = score_file(rows, "backend", None, backend_section(workers=workers))
    assert summary["count"] == len(ROWS)
    return summary["success_rate"]


@pytest.fixture
def workdir() -> str:
    """A directory that the normal user may write in, too (pytest's tmp_path is closed to others)."""
    path = tempfile.mkdtemp(prefix="sweetflow-memory-attack-")
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path)


def as_user(user: str, nonroot: NonRoot | str, function, cwd: str, **kwargs):
    """`function(**kwargs)` here (root's sandbox), or as a normal user (that user's sandbox)."""
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip("the root sandbox needs root")
        return function(**kwargs)
    if isinstance(nonroot, str):
        pytest.skip(nonroot)
    result, left = nonroot.call(f"{__name__}:{function.__name__}", cwd, **kwargs)
    assert left == []
    return result


@pytest.mark.parametrize("user", ["root", "non-root"])
def test_in_one_pool_after_the_references_the_scraper_finds_none_of_them(user: str, nonroot, workdir: str):
    successes = as_user(user, nonroot, scraper_successes_in_one_pool, workdir)
    assert successes == 0


@pytest.mark.parametrize("user", ["root", "non-root"])
@pytest.mark.parametrize("workers", [1, 2])
def test_sweetflow_score_keeps_references_out_of_the_answers_pool(user: str, workers: int, nonroot, workdir: str):
    rate = as_user(user, nonroot, scraper_success_rate_by_score_file, workdir, workdir=workdir, workers=workers)
    assert rate == 0.0
