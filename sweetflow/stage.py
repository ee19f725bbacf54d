"""What every stage does first: read its arguments (the domain and, for a stage of a `matrix` or
`foreach` item, the item's name), load params.yaml, and read its own definition in dvc.yaml: its name,
the params sections it declares (what its manifest records), what it depends on and where its output
and metrics go. Another stage's output is found by that stage's definition, and only where this
stage's entry declares it among its deps:

    stage = begin("critic", __doc__, item="critics")     # python -m stages.critic DOMAIN NAME
    p = stage.params.critics[stage.item]
    pairs = stage.upstream("trajectory_pairs", file=PAIRS)   # data/DOMAIN/trajectory_pairs/pairs.parquet
    with stage.output([pairs], p.seed) as out: ...
"""

from __future__ import annotations

import argparse
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from sweetflow.core import reproducibility
from sweetflow.core.artifacts import StageOutput, stage_output
from sweetflow.core.definition import Definition, definition, output_of
from sweetflow.core.errors import InputError
from sweetflow.core.memory import keep_freed_memory
from sweetflow.core.params import DOMAINS, AgentParams, section_of
from sweetflow.core.tables import TRAJECTORIES, read_tasks, task_file
from sweetflow.params import Params, load_params


@dataclass(frozen=True)
class Stage:
    kind: str  # the stage's key in dvc.yaml, and its module under stages/
    domain: str | None
    item: str | None  # the name of its critic, policy or agent, for the stages that have one
    params: Params
    definition: Definition  # its entry in dvc.yaml

    @property
    def sections(self) -> dict[str, object]:
        """Each params section the stage declares in dvc.yaml, by its key, with its value."""
        return {key: section_of(self.params, key) for key in self.definition.params}

    @property
    def out(self) -> str:
        return self.definition.out

    @property
    def metrics(self) -> str | None:
        return self.definition.metrics

    @property
    def name(self) -> str:
        """DVC's name of the stage: `critic@backend-with_info`, `tasks@backend`, `report`."""
        if self.domain is None:
            return self.kind
        return f"{self.kind}@{self.domain}" + (f"-{self.item}" if self.item else "")

    @property
    def report_dir(self) -> str:
        """Where its DVCLive report goes: the directory of its metrics file."""
        if self.metrics is None:
            raise InputError(f"dvc.yaml: stage {self.name!r} declares no metrics")
        return Path(self.metrics).parent.as_posix()

    def upstream(self, kind: str, item: str | None = None, file: str | None = None, domain: str | None = None) -> str:
        """The output of stage `kind` (of this stage's domain, or `domain`; `item`: its critic, policy or
        agent), or the `file` inside it, where dvc.yaml puts it. An input error unless this stage's
        entry declares it among its deps (the path itself or a directory holding it): what a stage
        reads is what DVC reruns it for."""
        path = output_of(kind, domain or self.domain, item, file)
        if not any(path.is_relative_to(dep) for dep in self.definition.deps):
            raise InputError(f"dvc.yaml: stage {self.name!r} reads {path.as_posix()}: add it to its deps")
        return path.as_posix()

    def offline_data(self) -> tuple[list[str], dict[str, dict]]:
        """What the trained chain's stages start from: the files of the training tasks and of the offline
        rollout (both declared deps, and inputs of the output) and the training tasks by task_id."""
        files = [self.upstream("tasks", file=task_file("train")), self.upstream("rollout", file=TRAJECTORIES)]
        return files, {t["task_id"]: t for t in read_tasks(self.domain, "train")}

    def output(
        self, inputs: list[Path | str], seed: int | None = None, *, metrics: bool = True, out: Path | str | None = None
    ) -> AbstractContextManager[StageOutput]:
        """`stage_output` of the stage's output (or `out`, another of its outs) with its name and
        params sections; `inputs` are the data it read (each a path of `upstream` or of params), and
        `metrics=False` leaves its metrics file to a DVCLive report that writes it."""
        return stage_output(out or self.out, self.name, self.sections, inputs, seed, self.metrics if metrics else None)


def begin(kind: str, doc: str | None, item: str | None = None, domain: bool = True) -> Stage:
    """Parse `[DOMAIN] [ITEM]`, load params.yaml and read the stage's entry of dvc.yaml. `item` names the
    params section whose keys the ITEM argument must be one of ("critics", "policies", "agents"); a name
    it lacks is an input error."""
    parser = argparse.ArgumentParser(
        prog=f"python -m stages.{kind}", description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    if domain:
        parser.add_argument("domain", choices=DOMAINS)
    if item:
        parser.add_argument("item", metavar="NAME", help=f"a key of `{item}` in params.yaml")
    args = parser.parse_args()
    keep_freed_memory()
    params = load_params()
    reproducibility.pin(params.reproducibility)  # before any kernel runs: the stage's modules only imported torch
    name = getattr(args, "item", None)
    if item and name not in getattr(params, item):
        raise InputError(f"params.yaml: {item}: no entry named {name!r}; defined: {sorted(getattr(params, item))}")
    domain_name = getattr(args, "domain", None)
    return Stage(kind, domain_name, name, params, definition(kind, domain_name, name, params.model_dump(mode="json")))


def with_checkpoint(agent: AgentParams, stage: Stage) -> AgentParams:
    """A model agent without a checkpoint samples from the stage's domain's base model."""
    if agent.backend in ("transformers", "served") and not agent.checkpoint:
        return agent.model_copy(update={"checkpoint": stage.upstream("base_model")})
    return agent
