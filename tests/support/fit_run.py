"""One SFT and one preference training of a checkpoint on prepared data, as a stage runs them:
`launch` first (which, with `training.accelerate_config` set, relaunches this module under
`accelerate launch`), then `train_sft` and `train_preference`. The main process writes what each
training recorded and its final weights, for a test to compare runs of different layouts.

    python -m tests.support.fit_run SPEC.json

SPEC holds `checkpoint` (a model directory), `data` (a torch file with `examples`, `pairs` and
`reference`), `trainer` and `engine` (TrainerParams and TrainingParams values) and `out`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from sweetflow.core.params import TrainerParams, TrainingParams
from sweetflow.models.checkpoint import load_checkpoint, pad_id
from sweetflow.rl.loop import TrainRun, launch
from sweetflow.rl.loss import PreferenceLoss
from sweetflow.rl.preference import ScoredPairs, train_preference
from sweetflow.rl.sft import train_sft


def main(spec_file: str) -> None:
    spec = json.loads(Path(spec_file).read_text())
    engine, p = TrainingParams(**spec["engine"]), TrainerParams(**spec["trainer"])
    launch(engine)
    data = torch.load(spec["data"], weights_only=False)
    out = Path(spec["out"])
    results = {}
    for kind in ("sft", "preference"):
        model, tokenizer = load_checkpoint(spec["checkpoint"])
        if kind == "sft":
            run = TrainRun(trainer=p, engine=engine, log_dir=out / kind, name="sft")
            fitted = train_sft(model, data["examples"], data["examples"], run=run, pad_id=pad_id(tokenizer))
        else:
            loss = PreferenceLoss(beta=0.1, length_normalize=True)
            pairs = ScoredPairs(data["pairs"], data["reference"])
            run = TrainRun(trainer=p, engine=engine, log_dir=out / kind, name=kind)
            fitted = train_preference(model, pairs, loss, run=run, pad_id=pad_id(tokenizer), holdout=pairs)
        if fitted.model is not None:  # the main process
            results[kind] = {"summary": fitted.summary, "run": fitted.run}
            torch.save({k: v.detach().clone() for k, v in fitted.model.state_dict().items()}, out / f"{kind}.pt")
    if results:
        (out / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
