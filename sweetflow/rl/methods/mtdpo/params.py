"""The knobs of method `mtdpo` (torch-free: every process that reads a policy's method imports it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sweetflow.core.params import PolicyParams


class Params(PolicyParams):
    """Multi-turn DPO on the trajectory pairs, every agent turn of a trajectory in one segment (the
    policy's view). Reads the preference knobs; no critic, no min_reward."""

    method: Literal["mtdpo"] = Field(description="This method: 'mtdpo'.")
