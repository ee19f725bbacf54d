"""The knobs of method `rft` (torch-free: every process that reads a policy's method imports it)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sweetflow.core.params import Domain, PolicyParams


class Params(PolicyParams):
    """Rejection fine-tuning: SFT on the offline trajectories whose reward reaches `min_reward`. Reads
    no critic and no preference knob (beta, length_normalize, nll_*)."""

    method: Literal["rft"] = Field(description="This method: 'rft'.")
    reads_preference: ClassVar[bool] = False
    min_reward: dict[Domain, float] = Field(
        description="Trajectories with at least this reward are kept, by domain (backend: 1 is ColBench's success; "
        "frontend: a similarity to the target)."
    )
