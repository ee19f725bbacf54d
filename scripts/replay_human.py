"""Does a change to the scripted human change any episode a workspace's stages have recorded?

Every backend stage that plays episodes (demos, rollouts, evaluations, validations, critic checks)
records each dialogue whole. The agents' turns depend only on the text before them, so if today's
`ScriptedHuman` gives every recorded human turn word for word, each episode replays as it ran and
the stage's outputs stand. The candidates' labels are checked the same way: each question among the
candidates is put to today's human, and its kind (a new fact or not) compared with the recorded one.

    .venv/bin/python scripts/replay_human.py            # in a workspace with the default's outputs checked out

Prints one row per recorded table, and exits 1 if any reply or label differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl
from tqdm import tqdm

from sweetflow.backend.diagnosis import label_candidates
from sweetflow.backend.simulators import ScriptedHuman, changed_replies
from sweetflow.core.tables import read_parquet
from sweetflow.dialogue import final_answer
from sweetflow.params import load_params
from sweetflow.rl.critic_check import SEPARATOR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("data/backend"))
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    args = parser.parse_args()
    s = load_params(args.params).backend.simulator
    if s.backend != "scripted":
        sys.exit(f"{args.params}: backend.simulator.backend is {s.backend!r}; only the scripted human replays")
    human = ScriptedHuman(s.max_facts, s.max_reply_chars, s.match_threshold)
    tasks = {
        t["task_id"]: t
        for split in ("train", "val", "test")
        for t in read_parquet(args.data / "tasks" / f"{split}.parquet").to_dicts()
    }

    candidates = args.data / "candidates" / "candidates.parquet"
    if candidates.exists():  # a critic check's episode plays on from a state: its task id is "<state_id>#<candidate>"
        for state_id, task_id in read_parquet(candidates, ["state_id", "task_id"]).unique().iter_rows():
            tasks[state_id] = tasks[task_id]

    differences = 0
    for path in sorted(args.data.rglob("trajectories*.parquet")):
        turns = changed = 0
        for task_id, dialogue in tqdm(read_parquet(path, ["task_id", "dialogue"]).iter_rows(), desc=str(path)):
            turns += sum(t["role"] == "human" for t in dialogue)
            for position, recorded, now in changed_replies(human, tasks[task_id.split(SEPARATOR)[0]], dialogue):
                changed += 1
                print(f"  {path} {task_id} turn {position}: recorded {recorded!r}, now {now!r}")
        print(f"{path}: {changed} of {turns} human turns differ")
        differences += changed

    if candidates.exists():
        questions = read_parquet(candidates).filter(
            pl.col("message").map_elements(lambda m: final_answer(m) is None, return_dtype=pl.Boolean)
        )  # an answer's label comes from its score, not from the human: never rescored here
        rollout = read_parquet(args.data / "rollout" / "trajectories.parquet")
        now = label_candidates(questions, rollout, tasks, human, score=None)
        recorded = read_parquet(args.data / "candidate_labels" / "labels.parquet").select(
            "state_id", "candidate", "kind"
        )
        changed = now.join(recorded, on=["state_id", "candidate"], suffix="_recorded").filter(
            pl.col("kind") != pl.col("kind_recorded")
        )
        for state_id, candidate, kind, was in changed.select(
            "state_id", "candidate", "kind", "kind_recorded"
        ).iter_rows():
            print(f"  {state_id} candidate {candidate}: recorded {was}, now {kind}")
        print(f"{candidates}: {changed.height} of {questions.height} questions' labels differ")
        differences += changed.height
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
