"""scripts/replay_human.py: does a change to the scripted human change any recorded episode?"""

from __future__ import annotations

import importlib.util

import polars as pl
import pytest

from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.dialogue import AGENT, HUMAN, Message
from tests.support.project import ROOT

SCRIPT = ROOT / "scripts" / "replay_human.py"
spec = importlib.util.spec_from_file_location("replay_human", SCRIPT)
replay = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replay)


def played(task: dict, questions: list[str]) -> list[dict]:
    human, dialogue = ScriptedHuman(), []
    for q in questions:
        dialogue.append({"role": AGENT, "content": q})
        dialogue.append(
            {"role": HUMAN, "content": human.reply(task, [Message(t["role"], t["content"]) for t in dialogue])}
        )
    return dialogue


def run(data, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setattr("sys.argv", ["replay_human.py", "--data", str(data), "--params", str(ROOT / "params.yaml")])
    with pytest.raises(SystemExit) as exit:
        replay.main()
    return exit.value.code, capsys.readouterr().out


def test_recorded_replies_replay_and_an_edited_one_is_named(tmp_path, monkeypatch, capsys):
    train, test = generate_tasks(4, 4, seed=3)
    (tmp_path / "tasks").mkdir()
    for split, tasks in (("train", train), ("val", []), ("test", test)):
        pl.DataFrame(tasks or None, schema=None if tasks else {"task_id": pl.String}).write_parquet(
            tmp_path / "tasks" / f"{split}.parquet"
        )
    episodes = [
        {"task_id": t["task_id"], "dialogue": played(t, [f"What is the {f['topic']}?" for f in t["facts"]] + ["Hi?"])}
        for t in train + test
    ]
    (tmp_path / "evaluations").mkdir()
    table = tmp_path / "evaluations" / "trajectories-seed0.parquet"
    pl.DataFrame(episodes).write_parquet(table)
    code, out = run(tmp_path, monkeypatch, capsys)
    turns = sum(len(e["dialogue"]) // 2 for e in episodes)
    assert code == 0 and f"{table}: 0 of {turns} human turns differ" in out

    episodes[2]["dialogue"][3]["content"] = "Something the human never said."
    pl.DataFrame(episodes).write_parquet(table)
    code, out = run(tmp_path, monkeypatch, capsys)
    assert code == 1 and f"{table}: 1 of {turns} human turns differ" in out
    assert f"{episodes[2]['task_id']} turn 3: recorded 'Something the human never said.'" in out
