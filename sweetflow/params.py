"""The whole of params.yaml: the sections every stage shares (`sweetflow.core.params`) and each
domain's own (`sweetflow.<domain>.params`), put together here, the one module that lists the
domains' params classes; `load_params` reads and validates the file."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SerializeAsAny, model_validator

from sweetflow.backend.params import BackendParams
from sweetflow.core.inputs import FileLimits
from sweetflow.core.params import (
    DOMAINS,
    PARAMS_FILE,
    AgentParams,
    CandidatesParams,
    ChatTemplateParams,
    CriticCheckParams,
    CriticParams,
    Domain,
    DomainParams,
    EpisodeParams,
    EvaluateParams,
    OfflineDataParams,
    PairsParams,
    PolicyEntry,
    RankParams,
    RolloutParams,
    Section,
    ServedAgentParams,
    StepPairsParams,
    TrainingParams,
    TransformersAgentParams,
    read_params,
)
from sweetflow.frontend.params import FrontendParams


class Params(Section):
    """The whole of params.yaml."""

    train_domains: list[Domain] = Field(
        description="Domains that go through the trained chain (demonstrations, base model, rollouts, critics, "
        "policies and their evaluations). Both domains always get their tasks and the reference agents' evaluations."
    )
    backend: BackendParams = Field(description=BackendParams.__doc__)
    frontend: FrontendParams = Field(description=FrontendParams.__doc__)
    agents: dict[str, AgentParams] = Field(
        description="Named agents; rollouts and evaluations refer to them by name. A scripted or no_ask agent plays "
        "each domain's own part (asking for facts, or applying named differences to a page)."
    )
    episodes: EpisodeParams = Field(description=EpisodeParams.__doc__)
    demos: RolloutParams = Field(
        description="Scripted demonstrations that warm-start a tiny base policy (stage `demos@<domain>`)."
    )
    rollout: OfflineDataParams = Field(description=OfflineDataParams.__doc__)
    pairs: PairsParams = Field(description=PairsParams.__doc__)
    training: TrainingParams = Field(description=TrainingParams.__doc__)
    critics: dict[str, CriticParams] = Field(
        description="SWEET-RL critics, one stage `critic@<domain>-<name>` each (with and without training-time "
        "information)."
    )
    candidates: CandidatesParams = Field(description=CandidatesParams.__doc__)
    rank: RankParams = Field(description=RankParams.__doc__)
    step_pairs: StepPairsParams = Field(description=StepPairsParams.__doc__)
    critic_check: CriticCheckParams = Field(description=CriticCheckParams.__doc__)
    policies: dict[str, SerializeAsAny[PolicyEntry]] = Field(  # dumped with its method's own knobs, once resolved
        description="Trained policies, one stage `policy@<domain>-<name>` each (SWEET-RL and its baselines)."
    )
    seeds: list[int] = Field(
        min_length=1,
        description="Each trained policy is trained, and each checkpoint evaluated, once per seed; reports "
        "give the mean and spread.",
    )
    evaluate: EvaluateParams = Field(description=EvaluateParams.__doc__)
    chat_template: ChatTemplateParams = Field(description=ChatTemplateParams.__doc__)
    device: str = Field(
        pattern=r"^(auto|cpu|cuda(:\d+)?)$",
        description="Where the stages that load a model for training or scoring put it (base_model, critic, rank, "
        "policy): auto, a CUDA GPU when one is visible, else the CPU; cpu; cuda or cuda:N (an error where none is "
        "visible). Manifests record the device and dtype a stage ran its models in, run records the GPU's name and "
        "memory. Agents that generate pick a visible GPU themselves.",
    )
    inputs: FileLimits = Field(description=FileLimits.__doc__)
    reproducibility: Literal["native", "portable"] = Field(
        description="Which CPUs give the same bytes. native: torch and MKL run the fastest kernels of this CPU, and "
        "only the same CPU type (and thread counts) reproduces a run bit for bit. portable: torch's AVX2 kernels and "
        "MKL's COMPATIBLE branch on every CPU, so any x86-64 CPU with AVX2, Intel or AMD, gives the same outputs as "
        "another, at the cost measured in docs/performance.md (Portable mode). Changing it changes every float result."
    )

    @model_validator(mode="after")
    def _names_exist(self) -> Params:
        used = [("demos.agent", self.demos.agent), ("rollout.agent", self.rollout.agent)]
        for where, name in used + [("evaluate.methods", m) for m in self.evaluate.methods]:
            if name not in self.agents:
                raise ValueError(f"{where}: no agent named {name!r}; defined agents: {sorted(self.agents)}")
        for name in self.evaluate.methods:
            if self.agents[name].backend in ("transformers", "served"):
                raise ValueError(
                    f"evaluate.methods: agent {name!r} samples from a checkpoint, which stage evaluate@<domain>-{name} "
                    "does not depend on; checkpoints are evaluated by evaluate_base (the base model) and "
                    "evaluate_policy (each trained policy), which do"
                )
        for name, policy in self.policies.items():
            if policy.critic and policy.critic not in self.critics:
                raise ValueError(
                    f"policies.{name}.critic: no critic named {policy.critic!r}; defined: {sorted(self.critics)}"
                )
        for name in ("train_domains", "seeds"):
            values = getattr(self, name)
            if len(set(values)) != len(values):
                raise ValueError(f"{name}: each value once; got {values}")
        for domain in self.train_domains:
            if self.domain(domain).tasks.n_train == 0 and self.domain(domain).tasks.source == "procedural":
                raise ValueError(f"train_domains has {domain!r}, whose tasks.n_train is 0: nothing to train on")
            if self.domain(domain).tasks.n_val == 0:
                raise ValueError(f"train_domains has {domain!r}, whose tasks.n_val is 0: nothing to validate on")
        if self.rollout.source == "import":
            if unable := [d for d in self.train_domains if not self.domain(d).imports_trajectories]:
                raise ValueError(f"rollout.source 'import' reads backend trajectories; train_domains has {unable[0]!r}")
            for name in DOMAINS:
                tasks = self.domain(name).tasks
                if (
                    self.domain(name).imports_trajectories
                    and tasks.source == "colbench"
                    and tasks.colbench_train is None
                ):
                    raise ValueError(
                        f"rollout.source 'import' needs training tasks: {name}.tasks.colbench_train is null"
                    )
        return self

    @model_validator(mode="after")
    def _portable_needs_fixed_threads(self) -> Params:
        """Threads split float sums: 0 (torch's default, one per core) differs between machines."""
        if self.reproducibility != "portable":
            return self
        threads = {"training.threads": self.training.threads}
        for where, agent in self.generators().items():
            if isinstance(agent, TransformersAgentParams):
                threads[f"{where}.threads"] = agent.threads
            elif isinstance(agent, ServedAgentParams):
                threads[f"{where}.server.threads"] = agent.server.threads
        if unset := [key for key, count in threads.items() if count == 0]:
            raise ValueError(f"reproducibility portable needs fixed thread counts: {', '.join(unset)} 0 (one per core)")
        return self

    def generators(self) -> dict[str, object]:
        """Every model that generates, by its params key: the agents, the candidates' policy, the evaluated one."""
        models = {f"agents.{name}": agent for name, agent in self.agents.items()}
        models.update({"candidates.policy": self.candidates.policy, "evaluate.policy": self.evaluate.policy})
        return models

    def domain(self, name: str) -> DomainParams:
        """The params of one domain, by its name (a key of DOMAINS)."""
        return getattr(self, name)


def load_params(path: Path | str = PARAMS_FILE) -> Params:
    """Read and validate params.yaml; every problem is a ParamsError naming the file and each bad key."""
    return read_params(Params, path)
