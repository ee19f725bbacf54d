"""The frontend design domain: the answer is an HTML page, rendered by headless Chromium and
compared with the target's screenshot (reward: visual similarity; no success); the simulated
designer names how the page it is shown differs from the one it has in mind."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from sweetflow.dialogue import Agent
from sweetflow.domain import Domain, DomainRuntime, FileScoring, Score
from sweetflow.frontend.agents import DesignExpert, DesignNoAsk
from sweetflow.frontend.diagnosis import label_candidates
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.report import REPORT
from sweetflow.frontend.scorefile import score_frontend_file
from sweetflow.frontend.scoring import score_pages
from sweetflow.frontend.similarity import Similarity, win_rate
from sweetflow.frontend.simulators import make_design_human
from sweetflow.params import NoAskAgentParams, Params, ScriptedAgentParams


class Frontend(Domain):
    name = "frontend"
    headline, goal_metric = REPORT.headline, REPORT.goal_metric

    @contextmanager
    def open(self, params: Params) -> Iterator[DomainRuntime]:
        p = params.frontend
        similarity = Similarity(p.scoring.similarity)
        with RenderPool(p.scoring.render) as pool:

            def score(tasks: list[dict], answers: list[str]) -> list[Score]:
                results = score_pages(answers, [t["target_png"] for t in tasks], pool, similarity)
                return [Score(r.similarity, None, r.status) for r in results]

            endpoint = p.simulator.endpoint
            human = make_design_human(p.simulator, pool.render)
            yield DomainRuntime(
                "frontend", human, endpoint.concurrency if endpoint else 1, score, view_fields, Score(0.0, None, None)
            )

    def scripted_agent(self, p: ScriptedAgentParams | NoAskAgentParams) -> Agent:
        return DesignExpert(p.skill) if p.backend == "scripted" else DesignNoAsk()

    def label_candidates(
        self, params: Params, candidates: pl.DataFrame, trajectories: pl.DataFrame, tasks: dict[str, dict]
    ) -> pl.DataFrame:
        """Each candidate's page rendered and compared with the target, against the page before it
        (`sweetflow.frontend.diagnosis`)."""
        with self.open(params) as runtime:
            return label_candidates(candidates, trajectories, tasks, runtime.score)

    def score_file(self, path: Path | str, scoring: FileScoring) -> tuple[dict, pl.DataFrame]:
        return score_frontend_file(path, scoring.render, scoring.similarity)

    def summarize(self, frame: pl.DataFrame, tasks: list[dict]) -> dict:
        """`similarity` and `win_rate` against each task's reference page, the one made from the
        description alone (`reference_similarity` in the task table; a tie is half a win)."""
        if not frame.height:
            return {"similarity": 0.0, "win_rate": 0.0}
        reference = {t["task_id"]: t["reference_similarity"] for t in tasks}
        return {
            "similarity": float(frame["reward"].mean()),
            "win_rate": win_rate(frame["reward"].to_list(), [reference[t] for t in frame["task_id"]]),
        }


def view_fields(task: dict) -> dict:
    """What scripted design agents may read: the target page, standing for what the human tells them."""
    return {"target": task["ground_truth"]}


DOMAIN = Frontend()
