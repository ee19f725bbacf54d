"""One flat training loop on accelerate, for this CPU and for several GPUs; every trainer uses it.

Run as a plain process it trains on the CPU (or one GPU). Under `accelerate launch --config_file
configs/accelerate/zero3.yaml` (or fsdp.yaml) the same code runs on every GPU: each process trains
on its share of every batch, and DeepSpeed ZeRO-3 or FSDP shards the weights, gradients and
optimiser state.

A trainer's `batch_size` is the effective batch: the examples or pairs of one optimiser step,
whatever the number of processes. Each process reads the same batches and takes its share,
`training.micro_batch_size` at a time, accumulating gradients over the passes
(`BatchLayout`). Every pass's loss is weighted by its share of the step's tokens (SFT) or pairs
(preference losses), counted over all processes, so that a step's gradient is that of the whole
batch however it is cut (the `num_items_in_batch` of transformers' Trainer).

What differs between SFT, the critic and DPO is their `Objective`: the items they learn from and
the loss of a batch (a `StepResult`); the rest of a run's settings are one `TrainRun`. Curves go
to DVCLive through accelerate's tracker: `train/<metric>` and `train/lr` every `LOG_EVERY` steps
(means over the window), `eval/<metric>` before training and after each epoch.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator, PartialState
from accelerate.utils import parse_flag_from_env, send_to_device, set_seed
from torch.utils.data import DataLoader
from tqdm import tqdm

from sweetflow.core.artifacts import save_every_seconds, temporary_path
from sweetflow.core.params import LoraParams, ParamsError, TrainerParams, TrainingParams
from sweetflow.rl.batching import LengthGroupedBatches, micro_batches
from sweetflow.rl.run_state import load_run_state, remove_run_state, save_run_state

LOG_EVERY = 10  # optimiser steps between two points of the training curve


@dataclass
class Fitted:
    """What `fit` gives back. `model` and `state` are None on processes other than the main one,
    which alone writes outputs."""

    model: object | None
    state: dict | None  # the full state dict gathered from every process (ZeRO-3 and FSDP keep shards)
    summary: dict  # steps, tokens, losses and evaluations: the same for the same inputs
    # Facts of this run on this machine, for its run record: the batch layout (BatchLayout.record),
    # seconds and tokens per second. Not in `summary`: another layout of the same effective batch
    # gives the same results up to float rounding.
    run: dict


@dataclass(frozen=True)
class BatchLayout:
    """How the effective batch of an optimiser step is spread: `processes` devices, each making
    `accumulation` forward and backward passes of `micro` examples or pairs."""

    effective: int
    micro: int
    processes: int
    accumulation: int

    def record(self) -> dict[str, int]:
        return {
            "effective_batch": self.effective,
            "micro_batch": self.micro,
            "processes": self.processes,
            "accumulation_steps": self.accumulation,
        }


def batch_layout(batch_size: int, micro: int | None, processes: int, name: str) -> BatchLayout:
    """The layout of `batch_size` (the effective batch) over `processes` processes with
    `training.micro_batch_size` `micro` (None: batch_size / processes); a ParamsError if it does not divide."""
    if micro is None:
        if batch_size % processes:
            raise ParamsError(
                f"{name}: batch_size {batch_size} (the effective batch) does not divide among {processes} "
                "processes; set training.micro_batch_size so that batch_size / (micro_batch_size x processes) is whole"
            )
        micro = batch_size // processes
    accumulation, rest = divmod(batch_size, micro * processes)
    if rest or not accumulation:
        raise ParamsError(
            f"{name}: batch_size {batch_size} (the effective batch) is not a multiple of training.micro_batch_size "
            f"{micro} x {processes} processes; batch_size / (micro_batch_size x processes) is the accumulation steps"
        )
    return BatchLayout(batch_size, micro, processes, accumulation)


@dataclass
class StepResult:
    loss: torch.Tensor  # what to backpropagate
    tokens: int  # tokens in the forward pass (for tokens/s)
    metrics: dict[str, float] = field(default_factory=dict)  # logged as train/<name>


def lr_at(step: int, total: int, peak: float, engine: TrainingParams) -> float:
    """Linear warm-up over `engine.warmup_share` of the steps, then cosine decay to `engine.final_lr_share`
    of the peak (as in nanoGPT)."""
    warmup = max(1, round(engine.warmup_share * total))
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    final = engine.final_lr_share
    return peak * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress)))


def with_lora(model, lora: LoraParams):
    from peft import LoraConfig, get_peft_model  # only runs that ask for adapters need peft

    config = LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def process_state() -> PartialState:
    """This process among those training together, as the Accelerator will see them (ACCELERATE_USE_CPU:
    processes on CPUs, talking through gloo): their count, whether this one is the main one, a barrier."""
    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


def process_count() -> int:
    """Processes training together."""
    return process_state().num_processes


def forward_batch_size(p: TrainerParams, engine: TrainingParams) -> int:
    """Examples or pairs a forward pass may hold on one device: the micro-batch, or the whole batch
    when none is set (for passes without gradients, such as evaluations and reference log-probs)."""
    return engine.micro_batch_size or p.batch_size


def launch_processes(p: TrainingParams, env: dict[str, str] = os.environ) -> int:
    """How many processes `accelerate launch` starts: `training.processes`, else the GPUs of the
    SLURM job (SLURM_GPUS_ON_NODE), else the CUDA devices torch sees (CUDA_VISIBLE_DEVICES applies)."""
    if p.processes:
        return p.processes
    slurm = env.get("SLURM_GPUS_ON_NODE")
    if slurm:
        if not slurm.isdigit():
            raise ParamsError(f"SLURM_GPUS_ON_NODE={slurm!r}: not a GPU count; set training.processes")
        return int(slurm)
    if not torch.cuda.device_count():
        raise ParamsError(
            f"training.accelerate_config is {p.accelerate_config!r}, but no GPU is visible and training.processes is "
            "null: set training.processes (with a config for CPUs, or when GPUs are hidden from this process)"
        )
    return torch.cuda.device_count()


def launch(p: TrainingParams) -> None:
    """Run the calling stage's training where `p` says. With `accelerate_config` set, replace this
    process by `accelerate launch` of the same stage module and arguments, on `launch_processes`
    processes (a command-line option wins over the config file's num_processes), so that `python -m
    stages.X` (as `dvc repro` runs it) trains on every GPU it was given; otherwise (and in the
    launched processes) fix torch's CPU thread count: a fixed count keeps float reductions, and so
    the trained weights, reproducible."""
    if p.accelerate_config and "ACCELERATE_MIXED_PRECISION" not in os.environ:  # not yet under a launcher
        module = sys.modules["__main__"].__spec__.name
        launcher = [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            p.accelerate_config,
            "--num_processes",
            str(launch_processes(p)),
        ]
        os.execv(sys.executable, launcher + ["-m", module, *sys.argv[1:]])
    if p.threads:
        torch.set_num_threads(p.threads)


@dataclass(frozen=True, kw_only=True)
class TrainRun:
    """The settings of one training run, in one place; callers name each."""

    trainer: TrainerParams  # what is learnt: seed, epochs, peak learning rate, effective batch
    engine: TrainingParams  # how: threads, precision, micro-batch, LoRA, length grouping, ...
    log_dir: Path | str  # DVCLive's directory for the run's curves and summary
    name: str  # the progress bar's and the tracker's name; errors name it
    device: str = "auto"  # params `device`: cpu keeps a GPU machine's training on the CPU
    # Where the run keeps its state while it trains (sweetflow.rl.run_state), and resumes from when a killed
    # run is started again; None: kept nowhere. Removed once the run finishes.
    resume_dir: Path | str | None = None
    # Seconds between two saves of that state: the most training a kill loses. How the run is kept, not what
    # it learns (a run saving at every step ends with the same bytes), so not a param: SWEETFLOW_SAVE_EVERY_S.
    save_every_s: float = field(default_factory=lambda: save_every_seconds(os.environ))


class Objective(ABC):
    """What SFT, the critic and DPO differ in: what they learn from and a batch's loss.

    `items` are what a batch is drawn from (examples, or groups of pairs); `lengths`, each item's padded
    length, lets `training.group_by_length` batch items of similar length; `per_step` is the items of
    an optimiser step (None: the trainer's batch_size; fewer when items are groups of pairs)."""

    items: list
    lengths: list[int] | None = None
    per_step: int | None = None

    @abstractmethod
    def collate(self, items: list) -> dict:
        """A micro-batch's items as tensors."""

    @abstractmethod
    def loss(self, model, batch: dict) -> StepResult:
        """The loss of one forward pass, its tokens and its metrics."""

    @abstractmethod
    def weight(self, batch: dict) -> int:
        """What `loss` is a mean over (tokens, pairs): the passes of a step are weighted by it."""

    def evaluate(self, model, accelerator: Accelerator) -> dict[str, float]:
        """`eval/<metric>`s, without gradients, before training and after each epoch; none by default."""
        return {}


def fit(model, objective: Objective, run: TrainRun) -> Fitted:
    """Train `model` on `objective.items` for `run.trainer.epochs` epochs, the way `run.engine` says.

    The returned model is unwrapped, with LoRA adapters merged into its weights, so that it saves as
    a plain checkpoint any server loads; the state dict is for `save_pretrained(..., state_dict=...)`.
    Torch's global settings are as they were before when it returns (`deterministic_algorithms`).
    """
    with deterministic_algorithms():
        return _fit(model, objective, run)


@contextmanager
def deterministic_algorithms():
    """Deterministic kernels while training, then the process's settings as they were: on CPU the
    backward of indexing with repeated indices (a shared prefix's cache read by several rows) otherwise
    adds in a thread-dependent order, and the same run must give the same weights. warn_only: on GPUs an
    op without a deterministic kernel warns instead of stopping training. Left on, the setting would
    slow and change whatever the process runs next (a stage's generation after its training)."""
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


@contextmanager
def dvclive_in_its_directory():
    """DVCLive, finding no DVC repository, runs `dvc init` in the enclosing git repository
    (`dvclive.dvc.get_dvc_repo`): a bench or a notebook inside a user's repository would get `.dvc/`
    staged there. While trackers start, it gets the repository that exists, or none; it writes only
    into its own directory either way (no dvc.yaml, no experiment)."""
    import dvclive.live
    from dvc.exceptions import NotDvcRepoError
    from dvc.repo import Repo
    from dvc.scm import SCMError

    def existing() -> Repo | None:
        try:
            return Repo()
        except (NotDvcRepoError, SCMError):
            return None

    finds = dvclive.live.get_dvc_repo
    dvclive.live.get_dvc_repo = existing
    try:
        yield
    finally:
        dvclive.live.get_dvc_repo = finds


def _fit(model, objective: Objective, run: TrainRun) -> Fitted:
    setup = _prepare(model, objective, run)
    progress = _start(setup, objective, run)
    _train(setup, objective, run, progress)
    return _finish(setup, run, progress)


@dataclass
class _Setup:
    """A run made ready: the accelerator, the model and optimiser it wraps, the batches and their layout."""

    accelerator: Accelerator
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    loader: DataLoader
    layout: BatchLayout
    processes: int
    total: int  # optimiser steps over every epoch


@dataclass
class _Progress:
    """Where a run stands: what a kept state holds, so that a resumed run goes on as the uninterrupted one."""

    summary: dict  # the run's one-number metrics (eval_*_initial, later the rest)
    step: int = 0
    tokens: int = 0  # this process's, summed over the processes when kept and at the end
    window: defaultdict = field(default_factory=lambda: defaultdict(list))  # the values since the curve's last point
    epoch_losses: list = field(default_factory=list)
    final_eval: dict = field(default_factory=dict)
    evaluated: int = 0  # epochs evaluated after, so that a resumed run does not evaluate one twice
    train_seconds: float = 0.0
    # A resumed run draws the batches it already trained on again without training on them, so that the data order
    # from there on is the uninterrupted run's; at `resumed_at` it takes back the kept window and epoch losses.
    resumed_at: int = 0
    kept: dict = field(default_factory=dict)

    def kept_state(self, accelerator: Accelerator) -> dict:
        return {
            "step": self.step,
            "tokens": int(accelerator.reduce(torch.tensor(self.tokens, device=accelerator.device), "sum")),
            "window": self.window,
            "epoch_losses": self.epoch_losses,
            "summary": self.summary,
            "final_eval": self.final_eval,
            "evaluated_epochs": self.evaluated,
            "train_seconds": self.train_seconds,
        }

    @classmethod
    def restored(cls, kept: dict, main_process: bool) -> _Progress:
        return cls(
            summary=kept["summary"],
            tokens=kept["tokens"] if main_process else 0,
            final_eval=kept["final_eval"],
            evaluated=kept["evaluated_epochs"],
            train_seconds=kept["train_seconds"],
            resumed_at=kept["step"],
            kept=kept,
        )


def _prepare(model, objective: Objective, run: TrainRun) -> _Setup:
    """The accelerator, the model (LoRA, gradient checkpointing), the batches and the optimiser, spread over the
    processes."""
    p, engine = run.trainer, run.engine
    processes = process_count()
    layout = batch_layout(p.batch_size, engine.micro_batch_size, processes, run.name)
    per_step = objective.per_step or p.batch_size
    precision = {"fp32": "no"}.get(engine.precision, engine.precision)
    accelerator = Accelerator(
        mixed_precision=precision,
        gradient_accumulation_steps=layout.accumulation,
        log_with="dvclive",
        cpu=run.device == "cpu",
    )
    set_seed(p.seed)  # python, numpy and torch: initialisation of adapters, dropout
    if engine.gradient_checkpointing:
        model.activation_checkpointing_enable()
        model.config.use_cache = False  # the cache is useless while training and conflicts with recomputation
    if engine.lora:
        model = with_lora(model, engine.lora)

    # Data: every process reads the same whole batches (the same seed) and takes its share
    # (micro_batches), so the data of a step is the same for any number of processes.
    items = objective.items
    if objective.lengths is not None and engine.group_by_length:
        sampler = LengthGroupedBatches(objective.lengths, per_step, p.seed)
        loader = DataLoader(items, batch_sampler=sampler, collate_fn=list)
    else:
        order = torch.Generator(device="cpu").manual_seed(p.seed)  # the loader draws indices on the CPU
        loader = DataLoader(items, batch_size=per_step, shuffle=True, collate_fn=list, generator=order)

    optimizer = torch.optim.AdamW(
        [q for q in model.parameters() if q.requires_grad], lr=p.learning_rate, betas=(0.9, 0.95), weight_decay=0.0
    )
    if accelerator.state.deepspeed_plugin is not None:  # it reads the micro-batch from a prepared loader; ours is not
        accelerator.state.deepspeed_plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = layout.micro
    model, optimizer = accelerator.prepare(model, optimizer)
    if accelerator.gradient_accumulation_steps != layout.accumulation:  # DeepSpeed's config wins over ours
        raise ParamsError(
            f"{engine.accelerate_config}: gradient_accumulation_steps {accelerator.gradient_accumulation_steps}, but "
            f"batch_size / (training.micro_batch_size x processes) is {layout.accumulation}: remove it from the config"
        )
    full, rest = divmod(len(items), per_step)
    total = p.epochs * (full + (rest >= processes))  # a last batch smaller than the processes is left out
    return _Setup(accelerator, model, optimizer, loader, layout, processes, total)


def _start(s: _Setup, objective: Objective, run: TrainRun) -> _Progress:
    """The run's kept state restored (weights, optimiser, curves, progress), or a fresh start with the first
    evaluation; the tracker started either way."""
    resume_dir = Path(run.resume_dir) if run.resume_dir is not None else None
    kept = load_run_state(s.accelerator, resume_dir, Path(run.log_dir)) if resume_dir else None
    # dvcyaml=None: the stage's metrics and plots are declared in the project's dvc.yaml. resume: the curves
    # restored with the state are continued, not cleared.
    dvclive = {"dir": str(run.log_dir), "dvcyaml": None, "save_dvc_exp": False, "resume": kept is not None}
    with dvclive_in_its_directory():
        s.accelerator.init_trackers(run.name, init_kwargs={"dvclive": dvclive})
    if kept:
        print(f"{run.name}: resuming at step {kept['step']} of {s.total} ({resume_dir})", file=sys.stderr)
        return _Progress.restored(kept, s.accelerator.is_main_process)
    return _Progress({f"eval_{k}_initial": v for k, v in _evaluate(s.model, objective, s.accelerator, 0).items()})


def _train(s: _Setup, objective: Objective, run: TrainRun, progress: _Progress) -> None:
    """The loop: a learning rate, one optimiser step, a point of the curve every LOG_EVERY steps, the run's state
    kept every `run.save_every_s` seconds, an evaluation after each epoch."""
    p, engine = run.trainer, run.engine
    started, saved = time.perf_counter() - progress.train_seconds, time.perf_counter()
    bar = tqdm(
        total=s.total,
        initial=progress.resumed_at,
        desc=run.name,
        unit="step",
        disable=not s.accelerator.is_local_main_process,
    )
    s.model.train()
    for epoch in range(p.epochs):
        progress.epoch_losses = []
        for batch in s.loader:
            if len(batch) < s.processes:
                continue
            if progress.step < progress.resumed_at:  # trained on before the run was kept
                progress.step += 1
                if progress.step == progress.resumed_at:  # where the kept run stood
                    progress.epoch_losses = progress.kept["epoch_losses"]
                    progress.window = defaultdict(list, progress.kept["window"])
                continue
            lr = lr_at(progress.step, s.total, p.learning_rate, engine)
            for group in s.optimizer.param_groups:
                group["lr"] = lr
            means, step_tokens = _train_step(s.model, objective, s.accelerator, s.layout, batch)
            s.accelerator.clip_grad_norm_(s.model.parameters(), engine.clip_norm)
            s.optimizer.step()
            s.optimizer.zero_grad(set_to_none=True)
            progress.step += 1
            progress.tokens += step_tokens
            progress.epoch_losses.append(means["loss"])
            for k, v in means.items():
                progress.window[k].append(v)
            if progress.step % LOG_EVERY == 0 or progress.step == s.total:
                means = {k: sum(v) / len(v) for k, v in progress.window.items()}
                s.accelerator.log({**{f"train/{k}": v for k, v in means.items()}, "train/lr": lr}, step=progress.step)
                bar.set_postfix(loss=f"{means['loss']:.3f}", epoch=epoch + 1)
                progress.window = defaultdict(list)
            bar.update()
            due = time.perf_counter() - saved >= run.save_every_s
            if run.resume_dir and progress.step < s.total and _due(due, s.accelerator):
                progress.train_seconds = time.perf_counter() - started
                save_run_state(
                    s.accelerator, Path(run.resume_dir), progress.kept_state(s.accelerator), Path(run.log_dir)
                )
                saved = time.perf_counter()
        if epoch >= progress.evaluated:  # not evaluated before the kept step
            progress.final_eval = _evaluate(s.model, objective, s.accelerator, progress.step)
            progress.evaluated = epoch + 1
    bar.close()
    progress.train_seconds = time.perf_counter() - started


def _finish(s: _Setup, run: TrainRun, progress: _Progress) -> Fitted:
    """What the run learnt and how fast, the trackers closed, and the model unwrapped (LoRA merged) for saving."""
    accelerator, engine = s.accelerator, run.engine
    if run.resume_dir:
        remove_run_state(accelerator, Path(run.resume_dir))
    tokens = int(accelerator.reduce(torch.tensor(progress.tokens, device=accelerator.device), "sum"))
    summary, losses, elapsed = progress.summary, progress.epoch_losses, progress.train_seconds
    summary.update(
        steps=progress.step,
        train_tokens=tokens,
        train_loss_last_epoch=round(sum(losses) / len(losses), 5) if losses else None,
        **{f"eval_{k}_final": v for k, v in progress.final_eval.items()},
    )
    speed = round(tokens / elapsed, 1) if elapsed else None
    facts = {**s.layout.record(), "train_seconds": round(elapsed, 2), "tokens_per_s": speed}
    # Into DVCLive's metrics.json only (plot=False): one number each, not a curve. Not the run's
    # facts: the metrics of the same inputs are the same bytes, so that a rerun changes nothing downstream.
    numbers = {k: v for k, v in summary.items() if v is not None}
    accelerator.log(numbers, step=progress.step, log_kwargs={"dvclive": {"plot": False}})

    accelerator.wait_for_everyone()
    state = accelerator.get_state_dict(s.model)  # a collective: every process takes part
    model = accelerator.unwrap_model(s.model)
    # Not end_training(): it also tears down the process group, which the stage's next training in
    # this process (the critic after its warm-up, a policy's next seed) still needs.
    for tracker in accelerator.trackers:
        tracker.finish()
    if not accelerator.is_main_process:
        return Fitted(None, None, summary, facts)
    if engine.lora:
        model, state = model.merge_and_unload(), None
    if engine.gradient_checkpointing:
        model.activation_checkpointing_disable()
        model.config.use_cache = True  # the saved checkpoint is for generation
    return Fitted(model.eval(), state, summary, facts)


def _due(due: bool, accelerator: Accelerator) -> bool:
    """Whether the run saves its state now: when any process's clock says so, so that every process
    takes part in the save's collectives at the same step."""
    if accelerator.num_processes == 1:
        return due
    return bool(accelerator.reduce(torch.tensor(int(due), device=accelerator.device), "max"))


def _train_step(
    model, objective: Objective, accelerator: Accelerator, layout: BatchLayout, items: list
) -> tuple[dict[str, float], int]:
    """One optimiser step's gradients from this process's share of `items`: the loss and metrics of
    the whole step (every pass of every process, weighted), and the tokens this process read."""
    processes = layout.processes
    runs = micro_batches(items, processes, accelerator.process_index, layout.accumulation)
    batches = [send_to_device(objective.collate(run), accelerator.device) for run in runs]
    weights = [objective.weight(batch) for batch in batches]
    whole = sum(weights)
    if processes > 1:
        whole = int(accelerator.reduce(torch.tensor(whole, device=accelerator.device), "sum"))
    whole = max(whole, 1)  # nothing to learn from (no scored token): every loss is 0
    means, tokens = defaultdict(float), 0
    for i, (batch, weight) in enumerate(zip(batches, weights)):
        last = i == len(batches) - 1
        accelerator.sync_gradients = last  # DeepSpeed steps at the boundary, the optimiser only then
        with nullcontext() if last else accelerator.no_sync(model):
            out = objective.loss(model, batch)
            # accelerate divides by the accumulation steps and DDP averages over processes: undone
            # here, so that the step's gradient is the weighted mean over all its passes.
            accelerator.backward(out.loss * (weight * layout.accumulation * processes / whole))
        for k, v in {"loss": out.loss.item(), **out.metrics}.items():
            means[k] += weight / whole * v  # one pass on one process: exactly its own values
        tokens += out.tokens
    if processes > 1:
        keys = sorted(means)
        values = torch.tensor([means[k] for k in keys], dtype=torch.float64, device=accelerator.device)
        means = dict(zip(keys, accelerator.reduce(values, "sum").tolist()))
    return means, tokens


def _evaluate(model, objective: Objective, accelerator: Accelerator, step: int) -> dict[str, float]:
    """The objective's evaluation, logged as `eval/<metric>` at `step`; the model is left training."""
    model.eval()
    with torch.no_grad():
        values = objective.evaluate(model, accelerator)
    model.train()
    if values:
        accelerator.log({f"eval/{k}": v for k, v in values.items()}, step=step)
    return values


@contextmanager
def live_report(report: Path | str) -> Iterator[Path]:
    """A temporary directory for DVCLive that replaces `report` when the block succeeds: after a
    kill there is the whole previous report or the whole new one, never a mix."""
    report = Path(report)
    report.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(report)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        yield tmp
        if tmp.exists():  # only the main process writes one
            shutil.rmtree(report, ignore_errors=True)
            os.replace(tmp, report)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
