"""What the site shows of episodes, as plain data: the test dialogues of each method, and SWEET-RL's
inside at sampled states (the candidates, each critic's score, played-out outcomes, the pairs).

Everything here reads the stages' tables and returns dicts of JSON-able values; `sweetflow.report.site`
writes them into the pages. Frontend pages are rendered here (the episodes keep the HTML, not its
screenshot) and saved as small JPEGs beside the pages.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from PIL import Image

from sweetflow.backend.diagnosis import failure_kind, told
from sweetflow.backend.scoring import passes_test
from sweetflow.dialogue import AGENT, HUMAN
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.similarity import Similarity
from sweetflow.frontend.simulators import page_snippet
from sweetflow.params import Params
from sweetflow.rl.critic_check import SEPARATOR

# Design dialogues rendered per method: each turn's page is a browser render, and a trained frontend
# has 500 test tasks x seeds x up to 10 turns. The first ones of the first seed show what a method does.
MAX_DESIGN_DIALOGUES = 20
# SWEET-RL states shown: those whose critic's best and worst candidates were played out come first.
MAX_STATES = 40
THUMB_WIDTH = 480  # px of a page's picture on the site; a click opens the same file
SEED_FILE = re.compile(r"trajectories-seed(\d+)\.parquet$")


def read_episodes(directory: Path) -> pl.DataFrame | None:
    """A method's test episodes under `directory` (every trajectories*.parquet), with a `seed_index`
    column (the k of trajectories-seed<k>, null for a single run); None when it has none."""
    frames = []
    for path in sorted(directory.glob("trajectories*.parquet")):
        match = SEED_FILE.search(path.name)
        frame = pl.read_parquet(path)
        frames.append(frame.with_columns(seed_index=pl.lit(int(match.group(1)) if match else None, pl.Int64)))
    return pl.concat(frames, how="diagonal_relaxed") if frames else None


def outcome(domain: str, reward: float | None, success: bool | None, failure: str | None) -> str:
    """The outcome filter's value of one episode."""
    if failure is not None or reward is None:
        return "not completed"
    if domain == "backend":
        return "all tests passed" if success else "some tests passed" if reward > 0 else "no test passed"
    return "similarity ≥ 0.9" if reward >= 0.9 else "similarity 0.5–0.9" if reward >= 0.5 else "similarity < 0.5"


def task_entry(domain: str, task: dict) -> dict:
    """What every dialogue of a task shares: its family, request, hidden facts and tests."""
    entry = {"family": task.get("family") or task.get("site") or "—", "request": task.get("problem_description", "")}
    if domain == "backend":
        entry["facts"] = [{"topic": f["topic"], "fact": f["fact"]} for f in task.get("facts") or []]
        entry["tests"] = [[call, exp] for call, exp in zip(task.get("test_cases") or [], task.get("expected") or [])]
    return entry


def backend_details(task: dict, row: dict) -> dict:
    """Which hidden facts the human told, why the episode failed, and each test's actual value."""
    replies = [t["content"] for t in row["dialogue"] if t["role"] == HUMAN]
    details = {"told": sorted(told(task, replies)) if task.get("facts") is not None else []}
    details["diagnosis"] = failure_kind(task, row["dialogue"], bool(row["success"])) if row["failure"] is None else None
    outputs = row.get("test_outputs")
    if outputs is not None:  # episodes recorded before test outputs were kept have none
        details["outputs"] = outputs
        details["passed"] = [passes_test(e, o) for e, o in zip(task.get("expected") or [], outputs)]
    return details


@dataclass
class Pictures:
    """Frontend pages rendered once each and saved under `<site>/img/`; similarities to each target."""

    site: Path
    params: Params
    _pool: object = None
    _similarity: object = None

    def __enter__(self) -> "Pictures":
        scoring = self.params.frontend.scoring
        self._pool = RenderPool(scoring.render).__enter__()
        self._similarity = Similarity(scoring.similarity)
        (self.site / "img").mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc) -> None:
        self._pool.__exit__(*exc)

    def save(self, png: bytes | None) -> str | None:
        """The site-relative path of a PNG's thumbnail, written once per distinct picture."""
        if png is None:
            return None
        name = f"img/{hashlib.sha256(png).hexdigest()[:20]}.jpg"
        path = self.site / name
        if not path.exists():
            image = Image.open(io.BytesIO(png)).convert("RGB")
            image.thumbnail((THUMB_WIDTH, THUMB_WIDTH * 8))
            image.save(path, "JPEG", quality=80, optimize=True)
        return name

    def pages(self, htmls: list[str | None], target: bytes | None) -> list[tuple[str | None, float | None]]:
        """(picture, similarity to the target) of each page; (None, None) for a message with no page."""
        distinct = list(dict.fromkeys(h for h in htmls if h is not None))
        shots = dict(zip(distinct, self._pool.render_many(distinct, desc=None)))
        sims = dict(zip(distinct, self._similarity([shots[h] for h in distinct], [target] * len(distinct))))
        sims = sims if target is not None else {}
        return [(None, None) if h is None else (self.save(shots[h]), sims.get(h)) for h in htmls]


def dialogues(domain: str, methods: dict[str, pl.DataFrame], tasks: dict[str, dict], pictures: Pictures | None) -> dict:
    """The dialogues page's data: tasks by id, and every episode of every method (frontend: the first
    MAX_DESIGN_DIALOGUES of each method's first seed, each turn's page rendered)."""
    episodes, used = [], set()
    for method, frame in methods.items():
        if domain == "frontend":
            first = frame["seed_index"].drop_nulls().min()
            frame = frame if first is None else frame.filter(pl.col("seed_index") == first)
            frame = frame.head(MAX_DESIGN_DIALOGUES)
        for row in frame.iter_rows(named=True):
            task = tasks.get(row["task_id"])
            if task is None:
                continue
            used.add(row["task_id"])
            turns = [{"role": t["role"], "text": t["content"]} for t in row["dialogue"]]
            entry = {
                "method": method, "seed": row["seed_index"], "task": row["task_id"], "sample": row["sample"],
                "reward": row["reward"], "success": row["success"], "ended_by": row["ended_by"],
                "failure": row["failure"], "outcome": outcome(domain, row["reward"], row["success"], row["failure"]),
                "answer": row["answer"], "turns": turns,
            }  # fmt: skip
            if domain == "backend":
                entry.update(backend_details(task, row))
            elif pictures is not None:
                htmls = [page_snippet(t["text"]) if t["role"] == AGENT else None for t in turns]
                for turn, (picture, sim) in zip(turns, pictures.pages(htmls, task.get("target_png"))):
                    if picture is not None:
                        turn.update(page=picture, similarity=sim)
                final = pictures.pages([page_snippet(row["answer"] or "")], task.get("target_png"))[0]
                entry.update(final_page=final[0], final_similarity=final[1])
            episodes.append(entry)
    shown = {}
    for task_id in sorted(used):
        shown[task_id] = task_entry(domain, tasks[task_id])
        if pictures is not None and domain == "frontend":
            shown[task_id]["target"] = pictures.save(tasks[task_id].get("target_png"))
    return {"domain": domain, "methods": list(methods), "tasks": shown, "episodes": episodes,
            "frontend_limit": MAX_DESIGN_DIALOGUES if domain == "frontend" else None}  # fmt: skip


def read_table(path: Path) -> pl.DataFrame | None:
    return pl.read_parquet(path) if path.is_file() else None


def sweet_states(data: Path, tasks: dict[str, dict]) -> dict | None:
    """SWEET-RL at sampled states of `data` (data/<domain>): the dialogue so far, the candidate
    actions, each critic's score of each, its label (good or bad), the critic check's played-out
    outcomes and each critic's step pairs; None before the candidates stage has run."""
    candidates = read_table(data / "candidates" / "candidates.parquet")
    rollout = read_table(data / "rollout" / "trajectories.parquet")
    if candidates is None or rollout is None:
        return None
    critics = sorted(d.name for d in (data / "ranked").iterdir() if d.is_dir()) if (data / "ranked").is_dir() else []
    picked = {c: read_table(data / "critic_check" / c / "picked.parquet") for c in critics}
    checked = sorted({s for f in picked.values() if f is not None for s in f["state_id"].to_list()})
    states = list(dict.fromkeys(checked + sorted(candidates["state_id"].unique().to_list())))[:MAX_STATES]
    chosen = candidates.filter(pl.col("state_id").is_in(states))
    dialogues = {(t, s): d for t, s, d in rollout.select("task_id", "sample", "dialogue").iter_rows()}
    scores = {c: _by_state(read_table(data / "ranked" / c / "candidates.parquet"), ["candidate", "score"]) for c in critics}
    pairs = {c: _by_state(read_table(data / "step_pairs" / c / "pairs.parquet"), ["chosen", "rejected"]) for c in critics}
    labels = _by_state(read_table(data / "candidate_labels" / "labels.parquet"), ["candidate", "kind", "good"])
    played = {c: _played_out(data / "critic_check" / c, picked[c]) for c in critics}
    out = []
    for state_id in states:
        rows = chosen.filter(pl.col("state_id") == state_id).sort("candidate")
        first = rows.row(0, named=True)
        task = tasks.get(first["task_id"], {})
        prefix = dialogues.get((first["task_id"], first["sample"]), [])[: first["position"]]
        kinds = {c: (k, g) for c, k, g in labels.get(state_id, [])}
        out.append({
            "state": state_id, "task": first["task_id"], "turn": first["turn"],
            "family": task.get("family") or task.get("site") or "—",
            "request": task.get("problem_description", ""),
            "facts": [f["fact"] for f in task.get("facts") or []],
            "dialogue": [{"role": t["role"], "text": t["content"]} for t in prefix],
            "candidates": [{"index": c, "message": m, "kind": kinds.get(c, (None, None))[0], "good": kinds.get(c, (None, None))[1]}
                           for c, m in rows.select("candidate", "message").iter_rows()],
            "scores": {c: {str(i): s for i, s in scores[c].get(state_id, [])} for c in critics},
            "pairs": {c: [list(p) for p in pairs[c].get(state_id, [])] for c in critics},
            "played_out": {c: played[c][state_id] for c in critics if state_id in played[c]},
        })  # fmt: skip
    return {"critics": critics, "states": out, "total_states": candidates["state_id"].n_unique(),
            "per_state": int(candidates.group_by("state_id").len()["len"].max())}  # fmt: skip


def _by_state(frame: pl.DataFrame | None, columns: list[str]) -> dict[str, list[tuple]]:
    if frame is None:
        return {}
    grouped: dict[str, list[tuple]] = {}
    for state_id, *rest in frame.select("state_id", *columns).iter_rows():
        grouped.setdefault(state_id, []).append(tuple(rest))
    return grouped


def _played_out(directory: Path, picked: pl.DataFrame | None) -> dict[str, dict]:
    """Per checked state: the critic's best and worst candidates and the mean reward each reached
    when the base policy played the dialogue on from it (task ids "<state_id>#<candidate>")."""
    episodes = read_table(directory / "trajectories.parquet")
    if picked is None or episodes is None:
        return {}
    means = dict(episodes.group_by("task_id").agg(pl.col("reward").mean()).iter_rows())
    return {
        s: {"best": b, "worst": w, "best_reward": means.get(f"{s}{SEPARATOR}{b}"),
            "worst_reward": means.get(f"{s}{SEPARATOR}{w}")}
        for s, b, w in picked.select("state_id", "best", "worst").iter_rows()
    }
