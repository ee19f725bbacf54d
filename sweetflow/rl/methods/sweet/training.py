"""What `sweet` trains on: the step pairs its critic ranked (a state, then the chosen or the rejected
candidate, that last turn scored)."""

from __future__ import annotations

import polars as pl

from sweetflow.core.tables import CANDIDATES, PAIRS
from sweetflow.rl.methods.sweet.params import Params
from sweetflow.rl.policy_methods import PreferenceTraining, Source
from sweetflow.rl.sequences import step_pair_data


def training_data(p: Params, source: Source) -> PreferenceTraining:
    candidates_file = source.upstream("candidates", file=CANDIDATES)
    step_file = source.upstream("step_pairs", p.critic, file=PAIRS)
    pair_data, dropped = step_pair_data(
        source.tokenizer,
        source.tasks,
        source.trajectories,
        pl.read_parquet(candidates_file),
        pl.read_parquet(step_file),
        source.max_length,
    )
    return PreferenceTraining(p, source, [candidates_file, step_file], pair_data, dropped)
