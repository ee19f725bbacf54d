"""`sweetflow score --tasks`: the reference outputs the `tasks` stage stored with each task stand in for
running the references again, with results identical row by row; a task the table lacks, or whose
reference is nondeterministic, has its reference run as before; a table made under other limits or
another namespace is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from sweetflow.backend.params import ScoringRules
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scoring import check_references
from sweetflow.backend.tasks.colbench import read_backend_jsonl, task_from_row
from sweetflow.backend.tasks.table import CHECKED_SCHEMA, stored_references, to_frame
from sweetflow.cli import main
from sweetflow.core.artifacts import stage_output
from sweetflow.core.errors import InputError
from sweetflow.scorefile import OFFICIAL_RULES, score_file
from tests.support.params import backend_section, project_params, sandbox_params
from tests.support.project import SAMPLE

ROWS = SAMPLE / "backend_test_first100.jsonl"
RANDOM = {
    "problem_description": "Pick one.\ndef pick(xs):",
    "ground_truth": "def pick(xs):\n    import random\n    return random.random()\n",
    "test_cases": {"test1": "pick([1, 2])"},
}


def make_table(directory: Path, tasks: list[dict], rules: ScoringRules, namespace: str = "auto") -> Path:
    """A checked test table as the `tasks@backend` stage writes it (table and manifest)."""
    params = project_params().backend
    scoring = params.scoring.model_copy(update={"workers": 2, "namespace": namespace})
    with Sandbox(scoring) as sandbox:
        checks = check_references(tasks, sandbox, rules=rules)
    rows = [
        {**t, "split": "test", "expected": c.expected, "reference_passes": c.reference_passes, "flags": c.flags}
        for t, c in zip(tasks, checks)
    ]
    sections = {"backend.tasks": params.tasks.model_copy(update={"source": "colbench"}), "backend.scoring": scoring}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory.parent)  # the run record goes under reports/ of the working directory
        with stage_output(directory, "tasks@backend", sections) as out:
            to_frame(rows, CHECKED_SCHEMA).write_parquet(out.dir / "test.parquet")
    return directory / "test.parquet"


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> dict:
    """20 real ColBench rows and a random reference, with a table of 15 of them; trajectories of all
    21 (each reference as its own answer), then 5 wrong answers."""
    tmp = tmp_path_factory.mktemp("stored")
    rows = [json.loads(line) for line in ROWS.read_text().splitlines()[:20]] + [RANDOM]
    tasks = [task_from_row(r) for r in rows]
    table = make_table(tmp / "tasks", tasks[:15] + tasks[20:], ScoringRules(True, True))
    trajectories = tmp / "trajectories.jsonl"
    lines = [{"task": r, "answer": r["ground_truth"]} for r in rows]
    lines += [{"task": r, "answer": "def f():\n    return 0\n"} for r in rows[:5]]
    trajectories.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"tmp": tmp, "table": table, "trajectories": trajectories, "tasks": tasks}


def score(sample: dict, out: Path, stored: dict | None) -> tuple[dict, pl.DataFrame]:
    summary = score_file(sample["trajectories"], "backend", out, backend_section(workers=2, **OFFICIAL_RULES), stored)
    return summary, pl.read_parquet(out)


def test_stored_outputs_give_the_same_scores_row_by_row_without_running_those_references(sample):
    stored = stored_references(sample["table"], sandbox_params(), ScoringRules(True, True))
    assert len(stored) == 15  # the random reference is nondeterministic: left out of the stored outputs
    before, old_rows = score(sample, sample["tmp"] / "old.parquet", None)
    after, new_rows = score(sample, sample["tmp"] / "new.parquet", stored)
    assert before["references_run"] == 21 and after["references_run"] == 6  # 5 absent from the table, 1 random
    deterministic = pl.col("task_id") != sample["tasks"][20]["task_id"]
    columns = ["line", "task_id", "tests_passed", "success", "status", "passed", "reference_flags"]
    assert new_rows.filter(deterministic).select(columns).equals(old_rows.filter(deterministic).select(columns))
    assert new_rows["success"][:20].all() and not new_rows["success"][20:].any()
    assert after["references_flagged"] == before["references_flagged"] == {"nondeterministic": 1}


def test_a_table_made_under_other_rules_or_limits_is_refused_naming_it(sample):
    with pytest.raises(InputError, match=r"test.parquet: .*backend.scoring.namespace=function.* module"):
        stored_references(sample["table"], sandbox_params(), ScoringRules(True, False))
    with pytest.raises(InputError, match=r"test.parquet: .*backend.scoring.call_timeout_s=1.0.* 2.0"):
        stored_references(sample["table"], sandbox_params(call_timeout_s=2.0), ScoringRules(True, True))


def test_cli_scores_with_a_table_and_refuses_a_mismatched_one_in_one_line(sample, capsys, tmp_path):
    out = tmp_path / "scores.jsonl"
    args = ["score", "--domain", "backend", str(sample["trajectories"]), "--tasks", str(sample["table"])]
    assert main([*args, "--rules", "official", "--workers", "2", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["references_run"] == 6 and summary["count"] == 26
    assert main(args) == 2  # params.yaml's rules: the module namespace
    said = capsys.readouterr().out.strip()  # the CLI prints its one-line errors with rich, to stdout
    assert len(said.splitlines()) == 1 and str(sample["table"]) in said and "namespace" in said


def test_the_tasks_stage_table_reads_back_as_stored_references(tmp_path):
    tasks = read_backend_jsonl(ROWS, limit=3)
    table = make_table(tmp_path / "tasks", tasks, ScoringRules(False, False), namespace="module")
    stored = stored_references(table, sandbox_params(), ScoringRules(False, False))
    assert sorted(stored) == sorted(t["task_id"] for t in tasks)
    assert all(c.reference_passes == len(c.expected) and not c.flags for c in stored.values())
