"""Stage `policy@<domain>-<name>`: a trained policy, one checkpoint per seed of `seeds` (DESIGN.md §2
step 7 and the paper's baselines). Every method starts from the domain's base model and trains on
its own view of the dialogue (no training-time information):

- `rft`: SFT on the offline trajectories whose reward reaches the domain's `min_reward` (rejection fine-tuning).
- `mtdpo`: DPO on the trajectory pairs, every agent turn of a trajectory in one segment.
- `sweet`: DPO on the step pairs ranked by the critic `critic` (a state, then the chosen or the
  rejected candidate, that last turn scored), with the NLL term on the chosen actions.

`python -m stages.policy DOMAIN NAME` reads params `policies.NAME` and `seeds`, and the data its
method needs. The base model's log-probs of the training sequences are computed once and shared by
all seeds. Writes `models/DOMAIN/policies/NAME/` (`seed<k>/`: a checkpoint per seed;
`reference_logps.pt` for the preference methods; `manifest.json`) and
`reports/DOMAIN/stages/policies/NAME/` (`metrics.json`: data counts and each seed's training
summary; `plots/seed<k>/`: DVCLive curves).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

import polars as pl
import torch

from sweetflow import paths
from sweetflow.artifacts import stage_output, write_json
from sweetflow.domains import read_domain_tasks
from sweetflow.errors import InputError, run_stage
from sweetflow.models.checkpoint import load_checkpoint, save_checkpoint
from sweetflow.models.data import encode_chats
from sweetflow.models.preference_trainer import train_preference
from sweetflow.models.sequences import context_length
from sweetflow.models.sft import train_sft
from sweetflow.models.training import live_report, relaunch_under_accelerate, set_threads
from sweetflow.params import load_params
from sweetflow.preference import PreferenceLoss, reference_segment_logps
from sweetflow.training_data import step_pair_data, successful_chats, trajectory_pair_data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("domain", choices=("backend", "frontend"))
    parser.add_argument("name", help="a key of `policies` in params.yaml")
    args = parser.parse_args()
    domain, name = args.domain, args.name
    params = load_params()
    if name not in params.policies:
        raise InputError(f"params.yaml: policies: no policy named {name!r}; defined: {sorted(params.policies)}")
    p = params.policies[name]
    relaunch_under_accelerate(p, "stages.policy", [domain, name])
    set_threads(p)

    tasks_file, rollout = paths.task_table(domain, "train"), paths.trajectories(domain, "rollout")
    base_dir = paths.base_model(domain)
    tasks = {t["task_id"]: t for t in read_domain_tasks(domain, "train")}
    trajectories = pl.read_parquet(rollout)
    base, tokenizer = load_checkpoint(base_dir)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    max_length = context_length(tokenizer, base.config)
    inputs = [tasks_file, rollout, base_dir]
    if p.method == "rft":
        min_reward = p.min_reward[domain]
        examples, cut = encode_chats(tokenizer, successful_chats(tasks, trajectories, min_reward), max_length)
        if not examples:
            raise InputError(f"{rollout}: no trajectory reaches reward {min_reward}: nothing for RFT to imitate")
        data = {"train_dialogues": len(examples), "dialogues_cut": cut,
                "train_tokens_per_epoch": sum(len(e.input_ids) for e in examples)}  # fmt: skip
        pairs, ref = None, None
    else:
        if p.method == "mtdpo":
            pairs_file = f"{paths.trajectory_pairs(domain)}/pairs.parquet"
            inputs.append(pairs_file)
            pairs, _, dropped = trajectory_pair_data(
                tokenizer, tasks, trajectories, pl.read_parquet(pairs_file), False, "all", max_length
            )
        else:
            candidates_file = f"{paths.candidates(domain)}/candidates.parquet"
            step_file = f"{paths.step_pairs(domain, p.critic)}/pairs.parquet"
            inputs += [candidates_file, step_file]
            pairs, dropped = step_pair_data(
                tokenizer, tasks, trajectories, pl.read_parquet(candidates_file), pl.read_parquet(step_file), max_length
            )
        if not pairs.pairs:
            raise InputError(f"{inputs[-1]}: no preference pair to train on")
        ref = reference_segment_logps(base, pairs.sequences, p.batch_size, pad_id)
        data = {"train_pairs": len(pairs.pairs), "pairs_too_long": dropped, "train_tokens_per_epoch": pairs.tokens()}
        examples = None
    del base  # each seed starts from a fresh copy

    summaries = {}
    with live_report(paths.stage_report(domain, "policies", name)) as live, stage_output(
        paths.policy(domain, name), f"policy@{domain}-{name}", {f"policies.{name}": p, "seeds": params.seeds}, inputs,
        p.seed,
    ) as out:  # fmt: skip
        for seed in params.seeds:
            run = p.model_copy(update={"seed": p.seed + seed})
            model, _ = load_checkpoint(base_dir)
            seed_live = live / f".seed{seed}"
            if p.method == "rft":
                model, state, summary = train_sft(model, examples, [], run, pad_id, seed_live)
            else:
                loss = PreferenceLoss(p.beta, p.length_normalize, p.nll_coef)
                model, state, summary = train_preference(model, pairs, ref, loss, run, pad_id, seed_live, f"{name} seed {seed}")
            if model is None:  # not the main process
                continue
            save_checkpoint(model, tokenizer, out.dir / f"seed{seed}", state_dict=state)
            summaries[str(seed)] = summary
            (live / "plots").mkdir(parents=True, exist_ok=True)
            os.replace(seed_live / "plots", live / "plots" / f"seed{seed}")
            shutil.rmtree(seed_live)
        if ref is not None:
            torch.save({"sums": ref.sums, "counts": ref.counts}, out.dir / "reference_logps.pt")
        write_json(out.dir / "training_config.json", {"policy": p.model_dump(mode="json"), "seeds": params.seeds, "data": data})
        write_json(live / "metrics.json", {"method": p.method, "data": data, "seeds": summaries})
    print(json.dumps({"data": data, "seeds": summaries}, indent=2))


if __name__ == "__main__":
    run_stage(main)
