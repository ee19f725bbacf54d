"""How each method behaves, beyond its score: how far a trained policy moved from the base policy,
how its failures split (backend: answered with facts missing, miscopied, other; frontend: answers
that show no page), how often a dialogue filled the model's context, and how long dialogues ran.

Movement: every checkpoint evaluation of seed k draws the same random numbers per episode (episode
seed = evaluate.seed + k, then per task and sample), so a policy that had not moved at all would
say exactly what the base policy says. The share of test dialogues whose agent messages differ from
the zero-shot dialogue of the same task, sample and seed measures how far training moved it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from sweetflow.core.tables import SEED_TRAJECTORIES
from sweetflow.dialogue import AGENT

BASE = "zero_shot"
FAILURES = ("failed_facts_missing", "failed_miscopied", "failed_other")
NO_PAGE = ("no_html", "render_failed")  # the frontend's statuses of an answer scored as no page


def _agent_said(path: Path) -> dict[tuple[str, int], tuple[str, ...]]:
    frame = pl.read_parquet(path, columns=["task_id", "sample", "dialogue"])
    return {(t, s): tuple(turn["content"] for turn in d if turn["role"] == AGENT) for t, s, d in frame.iter_rows()}


def moved_from_base(evaluations: Path, method: str) -> float | None:
    """The share of `method`'s test dialogues, over its seeds, that differ from the base policy's
    with the same seed; None when either was not evaluated per seed."""
    files = sorted((evaluations / method).glob(SEED_TRAJECTORIES.format(seed="*")))
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


def no_page_share(evaluations: Path, method: str) -> float | None:
    """The share of `method`'s test episodes, over its seeds, whose answer showed no page that
    renders (scored 0: `no_html` or `render_failed`); None for episodes that are not design tasks."""
    files = sorted((evaluations / method).glob(SEED_TRAJECTORIES.format(seed="*")))
    if not files or "score_status" not in pl.read_parquet_schema(files[0]):
        return None
    statuses = pl.concat([pl.read_parquet(f, columns=["score_status"]) for f in files])["score_status"]
    if not statuses.is_in(NO_PAGE + ("rendered",)).all():
        return None
    return float(statuses.is_in(NO_PAGE).mean())


def behaviour_rows(evaluations: Path, metrics: dict[str, dict]) -> list[dict]:
    """Per evaluated method with seeds (`metrics`: method -> its metrics.json): its movement from
    the base, its failure shares (None where the domain has none), how many of its answers show no
    page (design tasks), how many dialogues filled the context, and its mean number of turns."""
    rows = []
    for method, data in metrics.items():
        if "seeds" not in data:
            continue
        rows.append(
            {
                "method": method,
                "moved_from_base": None if method == BASE else moved_from_base(evaluations, method),
                **{k: data.get(k) for k in FAILURES},
                "no_page": no_page_share(evaluations, method),
                "context_full": data["context_full"] / data["count"]
                if data.get("count") and "context_full" in data
                else None,
                "mean_turns": data.get("mean_turns"),
            }
        )
    return rows
