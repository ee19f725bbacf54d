"""The frontend design domain: the answer is an HTML page, rendered by headless Chromium and
compared with the target's screenshot (reward: visual similarity; no success; each episode also
records its `design` score and its `win` against the description's page); the simulated designer
names how the page it is shown differs from the one it has in mind."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from sweetflow.core.inputs import FileLimits
from sweetflow.core.params import NoAskAgentParams, ScriptedAgentParams
from sweetflow.dialogue import Agent
from sweetflow.domain import Domain, DomainRuntime, Score
from sweetflow.frontend.agents import DesignExpert, DesignNoAsk
from sweetflow.frontend.diagnosis import label_candidates
from sweetflow.frontend.params import FrontendParams
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.report import REPORT
from sweetflow.frontend.scorefile import score_frontend_file
from sweetflow.frontend.scoring import score_pages
from sweetflow.frontend.similarity import Similarity, win, win_rate
from sweetflow.frontend.simulators import make_design_human


class Frontend(Domain):
    name = "frontend"
    headline, goal_metric = REPORT.headline, REPORT.goal_metric

    @contextmanager
    def open(self, p: FrontendParams) -> Iterator[DomainRuntime]:
        similarity = Similarity(p.scoring.similarity)
        by_design = p.scoring.similarity.win_metric == "design"
        with RenderPool(p.scoring.render) as pool:

            def score(tasks: list[dict], answers: list[str]) -> list[Score]:
                targets, pages = [t["target_png"] for t in tasks], [t["ground_truth"] for t in tasks]
                results = score_pages(answers, targets, pages, pool, similarity)
                return [
                    Score(
                        r.similarity,
                        None,
                        r.status,
                        extra={
                            "design": r.design,
                            "win": win(
                                r.design if by_design else r.similarity,
                                t["reference_design"] if by_design else t["reference_similarity"],
                            ),
                        },
                    )
                    for r, t in zip(results, tasks)
                ]

            endpoint = p.simulator.endpoint
            human = make_design_human(p.simulator, pool.render)
            yield DomainRuntime(
                "frontend",
                human,
                endpoint.concurrency if endpoint else 1,
                score,
                view_fields,
                Score(0.0, None, None, extra={"design": 0.0, "win": 0.0}),  # an unfinished episode wins nothing
            )

    def scripted_agent(self, p: ScriptedAgentParams | NoAskAgentParams) -> Agent:
        return DesignExpert(p.skill) if p.backend == "scripted" else DesignNoAsk()

    def label_candidates(
        self, p: FrontendParams, candidates: pl.DataFrame, trajectories: pl.DataFrame, tasks: dict[str, dict]
    ) -> pl.DataFrame:
        """Each candidate's page rendered and compared with the target, against the page before it
        (`sweetflow.frontend.diagnosis`)."""
        with self.open(p) as runtime:
            return label_candidates(candidates, trajectories, tasks, runtime.score)

    def score_file(
        self, path: Path | str, p: FrontendParams, stored: dict, limits: FileLimits
    ) -> tuple[dict, pl.DataFrame]:
        return score_frontend_file(path, p.scoring.render, p.scoring.similarity, limits)

    def summarize(self, frame: pl.DataFrame, tasks: list[dict]) -> dict:
        """`similarity` (the reward's metric) and `design`, each one's win rate against each task's
        reference page, the one made from the description alone (`reference_similarity`,
        `reference_design` in the task table; a tie is half a win), and `win_rate`: the one
        `win_metric` chose when the episodes were scored. Trajectories imported with the file's
        reward have no `design`: their win rate is the similarity's."""
        keys = ("similarity", "win_rate", "design", "similarity_win_rate", "design_win_rate")
        if not frame.height:
            return dict.fromkeys(keys if "design" in frame.columns else keys[:2], 0.0)
        by_task = {t["task_id"]: t for t in tasks}
        ids = frame["task_id"].to_list()
        similarity_wins = win_rate(frame["reward"].to_list(), [by_task[t]["reference_similarity"] for t in ids])
        if "design" not in frame.columns:
            return {"similarity": float(frame["reward"].mean()), "win_rate": similarity_wins}
        return {
            "similarity": float(frame["reward"].mean()),
            "win_rate": float(frame["win"].mean()),
            "design": float(frame["design"].mean()),
            "similarity_win_rate": similarity_wins,
            "design_win_rate": win_rate(frame["design"].to_list(), [by_task[t]["reference_design"] for t in ids]),
        }


def view_fields(task: dict) -> dict:
    """What scripted design agents may read: the target page, standing for what the human tells them."""
    return {"target": task["ground_truth"]}


DOMAIN = Frontend()
