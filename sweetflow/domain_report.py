"""What the report asks of a domain: how its results read, apart from how it is played.

`get_domain_report(name)` gives the `DomainReport` of `sweetflow.<name>.report`: the two headline
metrics and their words, the paper's numbers, what an episode's outcome is called and what the site
shows of a task and of an episode. It starts nothing that scores answers: the report reads what the
evaluations recorded (the frontend's site renders pages to show them, which is all it runs). The
domain's `Domain` (`sweetflow.domain`), which starts simulators and scorers, takes its headline from here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sweetflow.core.domains import domain_module
from sweetflow.core.params import DomainParams

NOT_COMPLETED = "not completed"  # the outcome of an episode that failed or was not scored


@dataclass(frozen=True)
class BehaviourColumn:
    """A column of the report's "how the policies behave" table: a key of the behaviour rows, its
    header, and whether it is a share (shown in %) or a plain number (one decimal)."""

    key: str
    header: str
    share: bool = True


class DomainReport(ABC):
    name: str
    title: str
    # The two metrics of the paper's Table 2, as metrics files name them, and as the table heads
    # them; `goal_metric` is the one the paper's ordering is checked on.
    headline: tuple[str, str]
    columns: tuple[str, str]
    goal_metric: str
    description: str  # what the table's numbers are, after "Numbers are"
    # The paper's numbers (arXiv 2503.15478, Table 2 and ablations, Llama-3.1-8B), by method, and
    # GPT-4o collaborating; each the pair of `headline` in %.
    paper: dict[str, tuple[float, float]]
    gpt4o: tuple[float, float]
    # The per-episode outcome that paired comparisons average, and what the report calls it.
    episode_column: str
    episode_measure: str
    # Also pair the wins of `episode_column` against each test task's `reference_similarity`, read
    # from the domain's test task table.
    paired_wins: bool = False
    behaviour_note: str  # what the behaviour table's columns after "moved from base" mean
    behaviour_columns: tuple[BehaviourColumn, ...]
    # At most this many dialogues of each method's first seed are shown (None: every dialogue).
    dialogue_limit: int | None = None

    @property
    def goal_index(self) -> int:
        return self.headline.index(self.goal_metric)

    def outcome(self, reward: float | None, success: bool | None, failure: str | None) -> str:
        """The outcome filter's value of one episode."""
        if failure is not None or reward is None:
            return NOT_COMPLETED
        return self.completed_outcome(reward, success)

    @abstractmethod
    def completed_outcome(self, reward: float, success: bool | None) -> str:
        """The outcome words of a completed episode."""

    def pictures(self, site: Path, p: DomainParams) -> AbstractContextManager[object | None]:
        """What draws the site's pictures of this domain's answers, as its section `p` scores them (None:
        it shows none)."""
        return nullcontext(None)

    def task_details(self, task: dict, pictures: object | None) -> dict:
        """What the dialogues page shows of a task besides its family and request."""
        return {}

    def prepare(self, episodes: list[tuple[dict, dict, list[dict]]], pictures: object | None) -> None:
        """Called with a method's shown episodes (task, trajectory row, dialogue turns) before their
        `episode_details`: where pictures are drawn, all of them at once."""

    def episode_details(self, task: dict, row: dict, turns: list[dict], pictures: object | None) -> dict:
        """What the dialogues page shows of an episode (a trajectory row) besides its dialogue `turns`
        and outcome; a "turns" key replaces them."""
        return {}

    def shown_episodes(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The episodes of a method the dialogues page shows."""
        if self.dialogue_limit is None:
            return frame
        first = frame["seed_index"].drop_nulls().min()
        frame = frame if first is None else frame.filter(pl.col("seed_index") == first)
        return frame.head(self.dialogue_limit)


def get_domain_report(name: str) -> DomainReport:
    """The report of the domain named `name`, from `sweetflow.<name>.report`."""
    return domain_module(name, "report").REPORT
