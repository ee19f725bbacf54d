"""ColBench's two domains behind one interface, found by name.

An episode is the same in both: an agent and a simulated human talk for at most `max_turns` turns
and the final answer is scored. What differs is who plays the parts and how an answer is scored:

- backend (`sweetflow.backend`): the answer is a Python function, run in the sandbox against the
  task's hidden tests (reward: the share of tests passed; success: all of them); the human answers
  from hidden facts.
- frontend (`sweetflow.frontend`): the answer is an HTML page, rendered by headless Chromium and
  compared with the target's screenshot (reward: visual similarity; no success); the human names
  how the shown page differs.

`get_domain(name)` gives the `Domain`; its `open(p)` starts what the domain needs (the sandbox's
workers, or a browser) and yields a `DomainRuntime` for the rollout engine. A domain reads its own
section of params.yaml (`p`, its `sweetflow.<domain>.params` class), never the whole file: the
assembler of params.yaml (`sweetflow.params`) sits above the domains. Making a domain's tasks
(`tasks@<domain>`) is each domain's `build_tasks(p) -> TaskSet`
(`sweetflow.<domain>.build`, loaded by `sweetflow.core.tables.task_builder`). How a domain's results read (its
metrics' words, what the site shows) is its `DomainReport` (`sweetflow.domain_report`), which starts
nothing, so that the report does not depend on the sandbox.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sweetflow.agents.model import open_model_agent
from sweetflow.core.domains import domain_module
from sweetflow.core.errors import InputError
from sweetflow.core.inputs import FileLimits
from sweetflow.core.params import AgentParams, DomainParams, NoAskAgentParams, ScriptedAgentParams
from sweetflow.dialogue import Agent


@dataclass
class Score:
    reward: float  # backend: share of tests passed; frontend: similarity to the target
    success: bool | None  # backend: every test passed; frontend: None (similarity has no pass mark)
    status: str | None  # backend: the sandbox's status; frontend: "rendered", "no_html", ...; None: not scored
    outputs: list[str | None] | None = None  # backend: each test's output (null where the call raised)
    # More per-answer values, each recorded as a column of its own (frontend: the design metric and the
    # win against the description's page); the backend has none, so its trajectories keep their columns.
    extra: dict[str, float] | None = None


@dataclass
class DomainRuntime:
    """What the rollout engine needs of a started domain."""

    name: str
    human: object  # `reply(task, messages) -> str`
    human_concurrency: int  # simulator calls in flight at once (an endpoint's bound; 1 offline)
    score: Callable[[list[dict], list[str]], list[Score]]  # (tasks, final answers) -> one Score each
    view_fields: Callable[[dict], dict]  # what scripted agents may read besides the public task
    unscored: Score  # what an episode that could not be completed scores


class Domain(ABC):
    name: str
    # The two metrics of the paper's Table 2, as metrics files name them; `goal_metric` is the one
    # the paper's ordering is checked on. Both are the domain's report's (`sweetflow.domain_report`).
    headline: tuple[str, str]
    goal_metric: str

    @abstractmethod
    def open(self, p: DomainParams) -> AbstractContextManager[DomainRuntime]:
        """Start the simulator and the scorer that the domain's section `p` names."""

    @abstractmethod
    def scripted_agent(self, p: ScriptedAgentParams | NoAskAgentParams) -> Agent:
        """The domain's own agent for a `scripted` or `no_ask` agent section."""

    @contextmanager
    def open_agent(self, p: AgentParams) -> Iterator[Agent]:
        """The agent `p` describes, playing this domain, for the length of the `with` block: scripted
        agents are the domain's own, model agents are not (their prompt follows the view's domain)."""
        if p.backend in ("scripted", "no_ask"):
            yield self.scripted_agent(p)
        else:
            with open_model_agent(p) as agent:
                yield agent

    @abstractmethod
    def summarize(self, frame: pl.DataFrame, tasks: list[dict]) -> dict:
        """The headline metrics of a set of trajectories (TRAJECTORY_SCHEMA) on `tasks`."""

    @abstractmethod
    def score_file(
        self, path: Path | str, p: DomainParams, stored: dict, limits: FileLimits
    ) -> tuple[dict, pl.DataFrame]:
        """Score a JSONL of ColBench rows (`task`, `answer`), read within `limits`, as the section `p` scores: the
        summary, and one scored row per line. `stored`: reference checks by task id from checked task tables
        (backend: those references do not run again)."""

    def label_candidates(
        self, p: DomainParams, candidates: pl.DataFrame, trajectories: pl.DataFrame, tasks: dict[str, dict]
    ) -> pl.DataFrame | None:
        """Each candidate action's kind and whether it is good at its state (state_id, candidate,
        kind, good), for the critic's mechanism metrics; None where the domain has no such labels."""
        return None

    def offline_task_id(self, row: dict, path: object, line: int) -> str:
        """The id of the task an official trajectory line's `task` object describes, derived from its
        content (the id the `colbench` task source gives it); a bad object names file, line and field."""
        raise InputError(f"{path}: importing trajectories is supported for the backend domain only, not {self.name}")

    def offline_task_ids(self, tasks: list[dict]) -> dict[str, str]:
        """`offline_task_id` of each of `tasks` (of any task source), mapped to its own task_id."""
        raise InputError(f"importing trajectories is supported for the backend domain only, not {self.name}")


def get_domain(name: str) -> Domain:
    """The domain named `name`, from `sweetflow.<name>.domain`. Imported by name when a stage asks
    for it: a stage of one domain loads only that domain's code, which is what its dvc.yaml
    dependencies (`sweetflow/<domain>`) cover."""
    return domain_module(name, "domain").DOMAIN
