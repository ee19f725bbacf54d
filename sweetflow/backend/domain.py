"""The backend programming domain: the answer is a Python function, run in the sandbox against the
task's hidden tests (reward: the share of tests passed; success: all of them); the simulated human
answers questions from the task's hidden facts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from sweetflow.backend.agents import NoAsk, ScriptedExpert
from sweetflow.backend.diagnosis import failure_breakdown, label_candidates
from sweetflow.backend.params import BackendParams, ScoringRules
from sweetflow.backend.report import REPORT
from sweetflow.backend.sandbox.pool import Sandbox
from sweetflow.backend.scorefile import score_backend_file
from sweetflow.backend.scoring import score_answers
from sweetflow.backend.simulators import ScriptedHuman, make_human
from sweetflow.backend.tasks.colbench import task_from_row, task_id_of
from sweetflow.core.inputs import FileLimits
from sweetflow.core.params import NoAskAgentParams, ScriptedAgentParams
from sweetflow.dialogue import Agent
from sweetflow.domain import Domain, DomainRuntime, Score


class Backend(Domain):
    name = "backend"
    headline, goal_metric = REPORT.headline, REPORT.goal_metric

    @contextmanager
    def open(self, p: BackendParams) -> Iterator[DomainRuntime]:
        with Sandbox(p.scoring) as sandbox:
            endpoint = p.simulator.endpoint
            concurrency = endpoint.concurrency if endpoint else 1
            yield sandbox_runtime(make_human(p.simulator), sandbox, concurrency, p.scoring_rules())

    def scripted_agent(self, p: ScriptedAgentParams | NoAskAgentParams) -> Agent:
        return ScriptedExpert(p.skill) if p.backend == "scripted" else NoAsk()

    def summarize(self, frame: pl.DataFrame, tasks: list[dict]) -> dict:
        """The headline pair, and for dialogues how the failures split: answered with facts missing,
        miscopied, or other (`sweetflow.backend.diagnosis`)."""
        n = frame.height
        headline = {
            "tests_passed": float(frame["reward"].mean()) if n else 0.0,
            "success_rate": float(frame["success"].mean()) if n else 0.0,
        }
        if "dialogue" not in frame.columns:  # references scored as answers: no dialogue to diagnose
            return headline
        by_id = {t["task_id"]: t for t in tasks}
        return {**headline, **failure_breakdown(by_id, frame.select("task_id", "dialogue", "success").rows())}

    def label_candidates(
        self, p: BackendParams, candidates: pl.DataFrame, trajectories: pl.DataFrame, tasks: dict[str, dict]
    ) -> pl.DataFrame:
        """Questions are judged by the scripted human's matcher (whatever simulator the run used),
        answers by the sandbox (`sweetflow.backend.diagnosis`)."""
        human = ScriptedHuman(p.simulator.max_facts, p.simulator.max_reply_chars, p.simulator.match_threshold)
        with Sandbox(p.scoring) as sandbox:
            runtime = sandbox_runtime(human, sandbox, rules=p.scoring_rules())
            return label_candidates(candidates, trajectories, tasks, human, runtime.score)

    def score_file(
        self, path: Path | str, p: BackendParams, stored: dict, limits: FileLimits
    ) -> tuple[dict, pl.DataFrame]:
        return score_backend_file(path, p.scoring, p.scoring_rules(), stored, limits)

    def offline_task_id(self, row: dict, path: object, line: int) -> str:
        return task_from_row(row, path, line)["task_id"]

    def offline_task_ids(self, tasks: list[dict]) -> dict[str, str]:
        """Keyed by content, as ColBench's rows are: a procedural or LLM-written task exported with
        `sweetflow export-trajectories` finds its way back to its own task_id."""
        return {task_id_of(t["ground_truth"], list(t["test_cases"])): t["task_id"] for t in tasks}


def view_fields(task: dict) -> dict:
    """What scripted agents may read: the facts a competent asker would ask about and how to write
    the answer once they are known (`sweetflow.dialogue.EpisodeView`)."""
    return {"topics": list(task.get("facts") or []), "template": task.get("template") or ""}


def sandbox_runtime(
    human, sandbox: Sandbox, human_concurrency: int = 1, rules: ScoringRules = ScoringRules()
) -> DomainRuntime:
    """The backend's runtime around a started sandbox: answers run against each task's tests."""

    def score(tasks: list[dict], answers: list[str]) -> list[Score]:
        expected, calls = [list(t["expected"]) for t in tasks], [list(t["test_cases"]) for t in tasks]
        results = score_answers(answers, expected, calls, sandbox, rules=rules)
        return [Score(r.tests_passed, r.success, r.status, r.outputs) for r in results]

    return DomainRuntime("backend", human, human_concurrency, score, view_fields, Score(0.0, False, None))


DOMAIN = Backend()
