"""What differs between ColBench's two domains, behind one small interface the stages share.

An episode is the same in both: an agent and a simulated human talk for at most ten turns and the
final answer is scored. What differs is who plays the parts and how an answer is scored:

- backend: the answer is a Python function, run in the sandbox against the task's hidden tests
  (reward: the share of tests passed; success: all of them); the human answers from hidden facts.
- frontend: the answer is an HTML page, rendered by headless Chromium and compared with the target's
  screenshot (reward: visual similarity; no success); the human names how the shown page differs.

`open_domain(params, name)` starts what a domain needs (the sandbox's workers, or a browser) and
yields a `DomainRuntime`; `make_agent(params, domain)` builds an agent that plays that domain.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sweetflow import paths
from sweetflow.agents import Agent
from sweetflow.agents import make_agent as make_backend_agent
from sweetflow.params import AgentParams, Params


@dataclass
class Score:
    reward: float  # backend: share of tests passed; frontend: similarity to the target
    success: bool | None  # backend: every test passed; frontend: None (similarity has no pass mark)
    status: str  # backend: the sandbox's status; frontend: "ok", "no_html" or "not_rendered"


@dataclass
class DomainRuntime:
    name: str
    human: object  # `reply(task, messages) -> str`
    human_concurrency: int  # simulator calls in flight at once (an endpoint's bound; 1 offline)
    score: Callable[[list[dict], list[str]], list[Score]]  # (tasks, final answers) -> one Score each

    def view_fields(self, task: dict) -> dict:
        """What scripted agents may read besides the public task (sweetflow.dialogue.EpisodeView)."""
        if self.name == "backend":
            return {"topics": list(task.get("facts") or []), "template": task.get("template") or ""}
        return {"target": task["ground_truth"]}


def make_agent(params: AgentParams, domain: str) -> Agent:
    """The agent `params` describe, playing `domain`: scripted agents are domain-specific, model
    agents are not (their prompt follows the view's domain)."""
    if domain == "frontend" and params.backend in ("scripted", "no_ask"):
        from sweetflow.frontend.agents import DesignExpert, DesignNoAsk

        return DesignExpert(params.skill) if params.backend == "scripted" else DesignNoAsk()
    return make_backend_agent(params)


def read_domain_tasks(domain: str, split: str) -> list[dict]:
    """The checked task table of a domain's split (the `tasks@<domain>` stage's output), as records,
    each with its `domain` (which the views of its episodes carry)."""
    path = paths.task_table(domain, split)
    if domain == "backend":
        from sweetflow.tasks.table import read_tasks

        frame = read_tasks(path)
    else:
        from sweetflow.frontend.tasks import read_frontend_tasks

        frame = read_frontend_tasks(path, checked=True)
    return [{**task, "domain": domain} for task in frame.to_dicts()]


@contextmanager
def open_domain(params: Params, name: str) -> Iterator[DomainRuntime]:
    if name == "backend":
        with _backend(params) as runtime:
            yield runtime
    elif name == "frontend":
        with _frontend(params) as runtime:
            yield runtime
    else:
        raise ValueError(f"unknown domain {name!r}")


def sandbox_runtime(human, sandbox, human_concurrency: int = 1) -> DomainRuntime:
    """The backend's runtime around a started sandbox: answers run against each task's tests."""
    from sweetflow.scoring import score_answers

    def score(tasks: list[dict], answers: list[str]) -> list[Score]:
        results = score_answers(
            answers, [list(t["expected"]) for t in tasks], [list(t["test_cases"]) for t in tasks], sandbox
        )
        return [Score(r.tests_passed, r.success, r.status) for r in results]

    return DomainRuntime("backend", human, human_concurrency, score)


@contextmanager
def _backend(params: Params) -> Iterator[DomainRuntime]:
    from sweetflow.sandbox import Sandbox
    from sweetflow.simulators import make_human

    p = params.backend
    with Sandbox(p.scoring) as sandbox:
        endpoint = p.simulator.endpoint
        yield sandbox_runtime(make_human(p.simulator), sandbox, endpoint.concurrency if endpoint else 1)


@contextmanager
def _frontend(params: Params) -> Iterator[DomainRuntime]:
    from sweetflow.frontend.render import RenderPool
    from sweetflow.frontend.scoring import score_pages
    from sweetflow.frontend.similarity import Similarity
    from sweetflow.frontend.simulators import make_design_human

    p = params.frontend
    similarity = Similarity(p.scoring.similarity)
    with RenderPool(p.scoring.render) as pool:

        def score(tasks: list[dict], answers: list[str]) -> list[Score]:
            results = score_pages(answers, [t["target_png"] for t in tasks], pool, similarity)
            return [Score(r.similarity, None, r.status) for r in results]

        endpoint = p.simulator.endpoint
        human = make_design_human(p.simulator, pool.render)
        yield DomainRuntime("frontend", human, endpoint.concurrency if endpoint else 1, score)
