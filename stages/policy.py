"""Stage `policy@<domain>-<name>`: a trained policy, one checkpoint per seed of `seeds` (docs/algorithm.md,
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

import json
import os
import shutil

import polars as pl
import torch

from stages._common import begin
from sweetflow.core.artifacts import write_json
from sweetflow.core.errors import InputError, run_stage
from sweetflow.core.tables import CANDIDATES, PAIRS, TRAJECTORIES, read_tasks, task_file
from sweetflow.models.checkpoint import load_checkpoint, pad_id, placement, resolve_device, save_checkpoint
from sweetflow.rl.logprobs import reference_segment_logps
from sweetflow.rl.loop import TrainRun, forward_batch_size, launch, live_report
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.sequences import context_length, step_pair_data, successful_chats, trajectory_pair_data
from sweetflow.rl.sft import encode_chats, train_sft


def main() -> None:
    stage = begin("policy", __doc__, item="policies")
    domain, name, params = stage.domain, stage.item, stage.params
    p, engine = params.policies[name], params.training
    launch(engine)

    tasks_file, rollout = stage.upstream("tasks", file=task_file("train")), stage.upstream("rollout", file=TRAJECTORIES)
    base_dir = stage.upstream("base_model")
    tasks = {t["task_id"]: t for t in read_tasks(domain, "train")}
    trajectories = pl.read_parquet(rollout)
    base, tokenizer = load_checkpoint(base_dir, resolve_device(params.device))  # the reference pass's device
    pad = pad_id(tokenizer)
    max_length = context_length(tokenizer, base.config)
    max_turns = stage.params.episodes.max_turns  # the turn limit the policy's prompts state
    inputs = [tasks_file, rollout, base_dir]
    if p.method == "rft":
        min_reward = p.min_reward[domain]
        chats = successful_chats(tasks, trajectories, min_reward, max_turns=max_turns)
        examples, cut = encode_chats(tokenizer, chats, max_length)
        if not examples:
            raise InputError(f"{rollout}: no trajectory reaches reward {min_reward}: nothing for RFT to imitate")
        data = {
            "train_dialogues": len(examples),
            "dialogues_cut": cut,
            "train_tokens_per_epoch": sum(len(e.input_ids) for e in examples),
        }
        pairs = None
    else:
        if p.method == "mtdpo":
            pairs_file = stage.upstream("trajectory_pairs", file=PAIRS)
            inputs.append(pairs_file)
            pair_data, _, dropped = trajectory_pair_data(
                tokenizer,
                tasks,
                trajectories,
                pl.read_parquet(pairs_file),
                False,
                "all",
                max_length,
                max_turns=max_turns,
            )
        else:
            candidates_file = stage.upstream("candidates", file=CANDIDATES)
            step_file = stage.upstream("step_pairs", p.critic, file=PAIRS)
            inputs += [candidates_file, step_file]
            pair_data, dropped = step_pair_data(
                tokenizer,
                tasks,
                trajectories,
                pl.read_parquet(candidates_file),
                pl.read_parquet(step_file),
                max_length,
                max_turns=max_turns,
            )
        if not pair_data.pairs:
            raise InputError(f"{inputs[-1]}: no preference pair to train on")
        if p.nll_span == "dialogue":
            pair_data = pair_data.with_context_segment()
        data = {
            "train_pairs": len(pair_data.pairs),
            "pairs_too_long": dropped,
            "train_tokens_per_epoch": pair_data.tokens(),
        }
        ref = reference_segment_logps(base, pair_data.sequences, forward_batch_size(p, engine), pad)
        pairs = ScoredPairs(pair_data, ref)
        examples = None
    del base  # each seed starts from a fresh copy

    summaries, runs = {}, {}
    with (
        live_report(stage.report_dir) as live,
        stage.output(inputs, p.seed, metrics=False) as out,  # DVCLive writes its metrics
    ):
        for seed in params.seeds:
            trainer = p.model_copy(update={"seed": p.seed + seed})
            model, _ = load_checkpoint(base_dir)
            seed_live = live / f".seed{seed}"
            if p.method == "rft":
                run = TrainRun(trainer=trainer, engine=engine, log_dir=seed_live, name="sft", device=params.device)
                fitted = train_sft(model, examples, [], run=run, pad_id=pad)
            else:
                loss = PreferenceLoss(p.beta, p.length_normalize, p.nll_coef, p.nll_span, p.nll_mean)
                run = TrainRun(
                    trainer=trainer, engine=engine, log_dir=seed_live, name=f"{name} seed {seed}", device=params.device
                )
                fitted = train_preference(model, pairs, loss, run=run, pad_id=pad)
            if fitted.model is None:  # not the main process
                continue
            save_checkpoint(fitted.model, tokenizer, out.dir / f"seed{seed}", state_dict=fitted.state)
            summaries[str(seed)], runs[str(seed)] = fitted.summary, fitted.run
            out.devices["policy"] = placement(fitted.model)
            (live / "plots").mkdir(parents=True, exist_ok=True)
            os.replace(seed_live / "plots", live / "plots" / f"seed{seed}")
            shutil.rmtree(seed_live)
        if pairs is not None:
            torch.save({"sums": pairs.ref.sums, "counts": pairs.ref.counts}, out.dir / "reference_logps.pt")
        config = {"policy": p.model_dump(mode="json"), "seeds": params.seeds, "data": data}
        write_json(out.dir / "training_config.json", config)
        write_json(live / "metrics.json", {"method": p.method, "data": data, "seeds": summaries})
        out.run["training"] = runs
    print(json.dumps({"data": data, "seeds": summaries, "run": runs}, indent=2))


if __name__ == "__main__":
    run_stage(main)
