"""What `mtdpo` trains on: the trajectory pairs in the policy's view, every agent turn in one segment."""

from __future__ import annotations

import polars as pl

from sweetflow.core.tables import PAIRS
from sweetflow.rl.methods.mtdpo.params import Params
from sweetflow.rl.policy_methods import PreferenceTraining, Source
from sweetflow.rl.sequences import trajectory_pair_data


def training_data(p: Params, source: Source) -> PreferenceTraining:
    pairs_file = source.upstream("trajectory_pairs", file=PAIRS)
    pair_data, _, dropped = trajectory_pair_data(
        source.tokenizer,
        source.tasks,
        source.trajectories,
        pl.read_parquet(pairs_file),
        with_info=False,  # the policy's view: no training-time information
        scoring="all",  # every agent turn of a trajectory in one segment
        max_length=source.max_length,
    )
    return PreferenceTraining(p, source, [pairs_file], pair_data, dropped)
