"""How each method behaves, beyond its score: how far a trained policy moved from the base policy,
and how its failures split (answered with facts missing, miscopied, other).

Movement: every checkpoint evaluation of seed k draws the same random numbers per episode (episode
seed = evaluate.seed + k, then per task and sample), so a policy that had not moved at all would
say exactly what the base policy says. The share of test dialogues whose agent messages differ from
the zero-shot dialogue of the same task, sample and seed measures how far training moved it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from sweetflow.dialogue import AGENT

BASE = "zero_shot"
FAILURES = ("failed_facts_missing", "failed_miscopied", "failed_other")


def _agent_said(path: Path) -> dict[tuple[str, int], tuple[str, ...]]:
    frame = pl.read_parquet(path, columns=["task_id", "sample", "dialogue"])
    return {
        (t, s): tuple(turn["content"] for turn in d if turn["role"] == AGENT)
        for t, s, d in frame.iter_rows()
    }


def moved_from_base(evaluations: Path, method: str) -> float | None:
    """The share of `method`'s test dialogues, over its seeds, that differ from the base policy's
    with the same seed; None when either was not evaluated per seed."""
    files = sorted((evaluations / method).glob("trajectories-seed*.parquet"))
    pairs = [(f, evaluations / BASE / f.name) for f in files if (evaluations / BASE / f.name).is_file()]
    if not pairs:
        return None
    differ = total = 0
    for mine, base in pairs:
        a, b = _agent_said(mine), _agent_said(base)
        common = a.keys() & b.keys()
        differ += sum(a[k] != b[k] for k in common)
        total += len(common)
    return differ / total if total else None


def behaviour_rows(evaluations: Path, metrics: dict[str, dict]) -> list[dict]:
    """Per evaluated method with seeds (`metrics`: method -> its metrics.json): its movement from
    the base and its failure shares (None where the domain has none)."""
    rows = []
    for method, data in metrics.items():
        if "seeds" not in data:
            continue
        rows.append({"method": method, "moved_from_base": None if method == BASE else moved_from_base(evaluations, method),
                     **{k: data.get(k) for k in FAILURES}})  # fmt: skip
    return rows
