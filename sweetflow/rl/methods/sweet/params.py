"""The knobs of method `sweet` (torch-free: every process that reads a policy's method imports it)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from sweetflow.core.params import PolicyParams


class Params(PolicyParams):
    """SWEET-RL: DPO on the step pairs ranked by the critic `critic`, with the NLL term on the chosen
    actions. Reads the preference knobs; no min_reward."""

    method: Literal["sweet"] = Field(description="This method: 'sweet'.")
    reads_critic: ClassVar[bool] = True
    critic: str | None = Field(description="The critic (a key of `critics`) whose step pairs to learn from.")
