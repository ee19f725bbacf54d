"""GPU check, benchmark step: the project's preference trainer and decoding at real model shapes, against
what a user would pick instead, in one process, the two sides alternating, medians reported.

Models are Llama-architecture with random weights from a config (nothing is downloaded): SmolLM2-135M's
and Llama-3.2-1B's shapes (`tiny`: a test of this script on a CPU).
- Training: fp32 master weights with `--precision` autocast for both trainers (params
  `training.precision`, TRL's `bf16=True`), pairs of a shared prompt and two responses.
  ours: `train_preference` (the policy stages' loop: accelerate, DVCLive), the reference log-probs
        computed once before (`reference_segment_logps`, timed apart);
  TRL:  `DPOTrainer`, loss sigmoid + 0.01 sft, its own reference model run every step (its default),
        the same pairs as text through a word-level tokenizer that maps word tK to id K.
  MFU: 6 x parameters x the pairs' tokens (chosen and rejected, the prompt in both) / seconds / the
  GPU's dense bf16 peak (`--peak-tflops`; by default its datasheet's, else the measured matmul ceiling).
- Generation: bf16 weights, prompts of `--gen-prompt` tokens ± an eighth, greedy, no stop token, every row
  `--gen-tokens` new tokens:
  ours: `sweetflow.agents.transformers.sample` (the transformers agent's decoding); HF: `model.generate`.
- The bf16 matmul ceiling (8192-square products).

Every measurement is skipped once `--budget` seconds are spent, and the JSON (`--out`) is written after
each, so that a timeout leaves what was measured. Prints a table. Usage (bench/gpu_check/run.sh runs it):

    .venv/bin/python bench/gpu_check/bench_gpu.py --out bench.json [--device auto] [--budget 900]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

for key, value in {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "TQDM_DISABLE": "1"}.items():
    os.environ.setdefault(key, value)

import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from sweetflow.core.artifacts import gpus  # noqa: E402
from sweetflow.models.checkpoint import resolve_device  # noqa: E402

SHAPES = {
    "llama3.2-1b": dict(
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
    ),
    "smollm2-135m": dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
    ),
    "tiny": dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=4096,
    ),
}
# Dense bf16 TFLOP/s of each GPU's datasheet (SXM parts); another GPU is measured against its matmul ceiling.
DATASHEET_TFLOPS = {"H200": 989, "H100": 989, "A100": 312, "L40S": 362}
PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"  # the project's: its training section
PAD, BOS, EOS = 0, 1, 2


def synchronize(device: torch.device) -> None:
    """Wait for the work queued on `device` (a GPU runs ahead of Python): a timer's end."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


WORDS = 32000  # the data's token ids: 3 .. min(vocab, WORDS) - 1


class Bench:
    def __init__(self, args):
        self.args = args
        self.device = resolve_device(args.device)
        self.deadline = time.perf_counter() + args.budget
        self.out = Path(args.out)
        self.results: dict = {"args": vars(args), "models": {}, "errors": [], "skipped": []}
        self.tmp = Path(tempfile.mkdtemp(prefix="gpu_bench_"))

    def measure(self, name: str, fn, *args):
        """`fn(*args)`, unless the budget is spent; an error is recorded, not raised. The JSON is written after."""
        if time.perf_counter() > self.deadline:
            self.results["skipped"].append(name)
            return None
        print(f"[bench_gpu] {name}", flush=True)
        try:
            return fn(*args)
        except Exception as e:  # a failed measurement is a finding; the others still run
            self.results["errors"].append({"name": name, "error": repr(e)[:2000]})
            return None
        finally:
            gc.collect()
            if self.device.type == "cuda":
                torch.cuda.empty_cache()
            self.out.write_text(json.dumps(self.results, indent=1, default=str))

    def timed(self, fn, *args):
        """(seconds, result) of `fn(*args)`, the device's queued work included."""
        synchronize(self.device)
        started = time.perf_counter()
        result = fn(*args)
        synchronize(self.device)
        return time.perf_counter() - started, result

    def peak_gb(self) -> float | None:
        return round(torch.cuda.max_memory_allocated(self.device) / 2**30, 2) if self.device.type == "cuda" else None

    def reset_peak(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)

    # --- the device and its ceiling ------------------------------------------------------------------

    def environment(self) -> None:
        import accelerate
        import transformers
        import trl

        self.results["env"] = {
            "device": self.device.type,
            "gpus": gpus(torch),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": transformers.__version__,
            "accelerate": accelerate.__version__,
            "trl": trl.__version__,
        }

    def matmul_ceiling(self) -> None:
        n = 8192 if self.device.type == "cuda" else 512
        a, b = (torch.randn(n, n, device=self.device, dtype=torch.bfloat16) for _ in range(2))
        self.timed(lambda: [a @ b for _ in range(3)])  # warm-up
        seconds, _ = self.timed(lambda: [a @ b for _ in range(10)])
        tflops = 2 * n**3 / (seconds / 10) / 1e12
        self.results["matmul_bf16_tflops"] = round(tflops, 1)
        name = self.results.get("env", {}).get("name", "")
        sheet = next((v for k, v in DATASHEET_TFLOPS.items() if k in name), None)
        self.results["peak_tflops"] = self.args.peak_tflops or sheet or round(tflops, 1)

    # --- models and data --------------------------------------------------------------------------------

    def model(self, name: str, dtype, device=None):
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            **SHAPES[name],
            tie_word_embeddings=True,
            max_position_embeddings=8192,
            pad_token_id=PAD,
            bos_token_id=BOS,
            eos_token_id=EOS,
        )
        torch.manual_seed(0)
        with torch.device(device or self.device):
            return LlamaForCausalLM(config).to(dtype)

    def triples(self, name: str, n: int, seed: int) -> list[tuple[list[int], list[int], list[int]]]:
        """`n` (prompt, chosen, rejected) id lists; responses end with EOS."""
        high, rng = min(SHAPES[name]["vocab_size"], WORDS), random.Random(seed)
        words = lambda k: [rng.randrange(3, high) for _ in range(k)]  # noqa: E731
        a = self.args
        return [(words(a.prompt), words(a.response - 1) + [EOS], words(a.response - 1) + [EOS]) for _ in range(n)]

    # --- training ---------------------------------------------------------------------------------------

    def train_ours(self, name: str, triples) -> dict:
        from accelerate.state import AcceleratorState
        from torch.optim.optimizer import register_optimizer_step_post_hook

        from sweetflow.core.params import TrainerParams
        from sweetflow.params import load_params
        from sweetflow.rl.logprobs import reference_segment_logps
        from sweetflow.rl.loop import TrainRun
        from sweetflow.rl.loss import PreferenceLoss
        from sweetflow.rl.preference import ScoredPairs, train_preference
        from sweetflow.rl.sequences import PairData, SegmentedSequence

        sequences = [
            SegmentedSequence(prompt + response, [-1] * len(prompt) + [0] * len(response))
            for prompt, chosen, rejected in triples
            for response in (chosen, rejected)
        ]
        data = PairData(sequences, [(2 * i, 2 * i + 1) for i in range(len(triples))])
        model = self.model(name, torch.float32)
        self.reset_peak()
        ref_s, ref = self.timed(reference_segment_logps, model, sequences, 2 * self.args.pairs_per_step, PAD)
        AcceleratorState._reset_state(True)  # accelerate fixes one precision per process otherwise
        engine = load_params(PARAMS).training.model_copy(
            update={
                "threads": 0,
                "precision": self.args.precision,
                "gradient_checkpointing": False,
                "lora": None,
                "micro_batch_size": None,
            }
        )
        trainer = TrainerParams(seed=0, epochs=1, learning_rate=1e-6, batch_size=self.args.pairs_per_step)
        run = TrainRun(
            trainer=trainer,
            engine=engine,
            log_dir=self.tmp / f"live-{name}",
            name=f"bench {name}",
            device=self.args.device,
        )
        steps: list[float] = []
        hook = register_optimizer_step_post_hook(
            lambda *_: (synchronize(self.device), steps.append(time.perf_counter()))
        )
        try:
            loss = PreferenceLoss(0.1, length_normalize=False, nll_coef=0.01)
            fitted = train_preference(model, ScoredPairs(data, ref), loss, run=run, pad_id=PAD)
        finally:
            hook.remove()
        return {
            "data_tokens": data.tokens(),
            "forward_tokens": fitted.summary["train_tokens"],
            "steps": fitted.summary["steps"],
            "train_s": fitted.run["train_seconds"],
            "step_s": [round(b - a, 4) for a, b in zip(steps, steps[1:])],  # from the second step on
            "ref_s": round(ref_s, 3),
            "peak_gb": self.peak_gb(),
        }

    def train_trl(self, name: str, triples) -> dict:
        from accelerate.state import AcceleratorState
        from datasets import Dataset
        from tokenizers import Tokenizer, models, pre_tokenizers
        from transformers import PreTrainedTokenizerFast, PrinterCallback, TrainerCallback
        from trl import DPOConfig, DPOTrainer

        high = min(SHAPES[name]["vocab_size"], WORDS)
        vocab = {"<pad>": PAD, "<s>": BOS, "</s>": EOS, **{f"t{i}": i for i in range(3, high)}}
        core = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
        core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        tokenizer = PreTrainedTokenizerFast(
            tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<pad>"
        )
        text = lambda ids: " ".join("</s>" if i == EOS else f"t{i}" for i in ids)  # noqa: E731
        rows = [{"prompt": text(p), "chosen": " " + text(c), "rejected": " " + text(r)} for p, c, r in triples]
        model = self.model(name, torch.float32)
        reference = copy.deepcopy(model).eval().requires_grad_(False)  # TRL's default: a frozen copy, run every step
        AcceleratorState._reset_state(True)
        config = DPOConfig(
            output_dir=str(self.tmp / f"trl-{name}"),
            beta=0.1,
            loss_type=["sigmoid", "sft"],
            loss_weights=[1.0, 0.01],
            per_device_train_batch_size=self.args.pairs_per_step,
            learning_rate=1e-6,
            num_train_epochs=1,
            adam_beta1=0.9,
            adam_beta2=0.95,
            weight_decay=0.0,
            max_grad_norm=1.0,
            seed=0,
            bf16=self.args.precision == "bf16",
            use_cpu=self.device.type == "cpu",
            max_length=None,
            report_to="none",
            save_strategy="no",
            eval_strategy="no",
            logging_strategy="no",
            disable_tqdm=True,
        )
        stamps: list[float] = []
        device = self.device

        class Clock(TrainerCallback):  # the loop alone, as fit()'s train_seconds
            def on_train_begin(self, *_, **__):
                synchronize(device)
                stamps.append(time.perf_counter())

            def on_step_end(self, *_, **__):
                synchronize(device)
                stamps.append(time.perf_counter())

        self.reset_peak()
        trainer = DPOTrainer(
            model, ref_model=reference, args=config, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
        )
        trainer.remove_callback(PrinterCallback)
        trainer.add_callback(Clock())
        output = trainer.train()
        tokenized = trainer.train_dataset
        same = [list(x) for x in zip(tokenized["prompt_ids"], tokenized["chosen_ids"], tokenized["rejected_ids"])]
        return {
            "data_tokens": sum(2 * len(p) + len(c) + len(r) for p, c, r in triples),
            "same_token_ids_as_ours": same == [list(t) for t in triples],
            "steps": output.global_step,
            "train_s": round(stamps[-1] - stamps[0], 3),
            "step_s": [round(b - a, 4) for a, b in zip(stamps[1:], stamps[2:])],  # from the second step on
            "peak_gb": self.peak_gb(),
        }

    def training(self, name: str) -> None:
        a = self.args
        entry = self.results["models"].setdefault(name, {})
        entry["parameters"] = sum(q.numel() for q in self.model(name, torch.float32, "meta").parameters())
        runs: dict[str, list[dict]] = {"ours": [], "trl": []}
        entry["training"] = {"runs": runs}
        sides = {"ours": self.train_ours, "trl": self.train_trl}
        warm = self.triples(name, a.pairs_per_step, seed=1)
        for side, fn in sides.items():  # one step each, not reported: kernels chosen, memory pools grown
            self.measure(f"{name} train warm-up {side}", fn, name, warm)
        timed = self.triples(name, a.pairs_per_step * a.steps, seed=2)
        for k in range(a.rounds):
            for side in ("ours", "trl") if k % 2 == 0 else ("trl", "ours"):
                got = self.measure(f"{name} train {side} round {k + 1}", sides[side], name, timed)
                if got:
                    runs[side].append(got)
        entry["training"]["summary"] = self.train_summary(entry["parameters"], runs)

    def train_summary(self, parameters: int, runs: dict[str, list[dict]]) -> dict:
        out, peak = {}, self.results.get("peak_tflops")
        for side, rs in runs.items():
            if not rs:
                continue
            seconds = statistics.median(r["train_s"] for r in rs)
            tokens = rs[0]["data_tokens"]
            out[side] = {
                "tokens_per_s": round(tokens / seconds),
                "mfu": round(6 * parameters * tokens / seconds / (peak * 1e12), 3) if peak else None,
                "step_s": round(statistics.median(t for r in rs for t in r["step_s"]), 3) if rs[0]["step_s"] else None,
                "peak_gb": max((r["peak_gb"] or 0) for r in rs) or None,
            }
            if side == "ours":
                out[side]["ref_s"] = statistics.median(r["ref_s"] for r in rs)
        if "ours" in out and "trl" in out:
            out["ours_over_trl"] = round(out["ours"]["tokens_per_s"] / out["trl"]["tokens_per_s"], 2)
        return out

    # --- generation -------------------------------------------------------------------------------------

    def generate_ours(self, model, prompts: list[list[int]]) -> list[list[int]]:
        from sweetflow.agents.transformers import sample

        generators = [torch.Generator(self.device).manual_seed(i) for i in range(len(prompts))]
        no_stop = torch.tensor([-1], device=self.device)
        rows = sample(model, prompts, generators, 0.0, 1.0, self.args.gen_tokens, 8192, no_stop, PAD)
        return [tokens for tokens, _, _ in rows]

    def generate_hf(self, model, prompts: list[list[int]]) -> list[list[int]]:
        width = max(map(len, prompts))
        ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts], device=self.device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        with torch.no_grad():
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=self.args.gen_tokens,
                min_new_tokens=self.args.gen_tokens,  # no stop, as ours: the same work on both sides
                do_sample=False,
                pad_token_id=PAD,
            )
        return out[:, width:].tolist()

    def generation(self, name: str) -> None:
        a = self.args
        model = self.model(name, torch.bfloat16).eval()
        model.generation_config.eos_token_id = None
        high, rng, spread = min(SHAPES[name]["vocab_size"], WORDS), random.Random(3), a.gen_prompt // 8
        lengths = [max(1, a.gen_prompt + rng.randrange(-spread, spread + 1)) for _ in range(max(a.gen_batches))]
        prompts = [[rng.randrange(3, high) for _ in range(n)] for n in lengths]  # left-padded: lengths differ
        rows = self.results["models"].setdefault(name, {})["generation"] = []
        sides = {"ours": self.generate_ours, "hf": self.generate_hf}
        for batch in a.gen_batches:
            ps = prompts[:batch]
            for side, fn in sides.items():  # warm-up
                self.measure(f"{name} generate warm-up {side} batch {batch}", fn, model, ps)
            times, outputs = {"ours": [], "hf": []}, {}
            for k in range(a.rounds):
                for side in ("ours", "hf") if k % 2 == 0 else ("hf", "ours"):
                    got = self.measure(f"{name} generate {side} batch {batch}", self.timed, sides[side], model, ps)
                    if got:
                        times[side].append(got[0])
                        outputs[side] = got[1]
            if times["ours"] and times["hf"]:
                ours, hf = statistics.median(times["ours"]), statistics.median(times["hf"])
                rows.append(
                    {
                        "batch": batch,
                        "ours_tokens_per_s": round(batch * a.gen_tokens / ours),
                        "hf_tokens_per_s": round(batch * a.gen_tokens / hf),
                        "ours_over_hf": round(hf / ours, 2),
                        "same_tokens": sum(x == y for x, y in zip(outputs["ours"], outputs["hf"])) / batch,
                    }
                )

    def table(self) -> Table:
        env = self.results.get("env", {})
        table = Table(
            title=f"{env.get('name')} ({env.get('memory_gib')} GiB): bf16 matmul "
            f"{self.results.get('matmul_bf16_tflops')} TFLOP/s; MFU against {self.results.get('peak_tflops')} TFLOP/s"
        )
        for column in ("model", "measure", "ours", "other", "ours / other"):
            table.add_column(column, justify="left" if column in ("model", "measure") else "right")
        for name, entry in self.results["models"].items():
            summary = entry.get("training", {}).get("summary", {})
            if "ours" in summary and "trl" in summary:
                ours, trl = summary["ours"], summary["trl"]
                table.add_row(
                    name, "DPO tokens/s (vs TRL)", str(ours["tokens_per_s"]), str(trl["tokens_per_s"]),
                    f"{summary['ours_over_trl']:.2f}x",
                )  # fmt: skip
                table.add_row(name, "MFU", str(ours["mfu"]), str(trl["mfu"]), "")
                table.add_row(name, "step s", str(ours["step_s"]), str(trl["step_s"]), "")
                table.add_row(name, "peak GB", str(ours["peak_gb"]), str(trl["peak_gb"]), "")
            for row in entry.get("generation", []):
                table.add_row(
                    name, f"decode tokens/s, batch {row['batch']} (vs HF)", str(row["ours_tokens_per_s"]),
                    str(row["hf_tokens_per_s"]), f"{row['ours_over_hf']:.2f}x",
                )  # fmt: skip
        return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the JSON results")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="cuda")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds; later measurements are skipped")
    parser.add_argument("--models", nargs="+", choices=list(SHAPES), default=["llama3.2-1b", "smollm2-135m"])
    parser.add_argument("--pairs-per-step", type=int, default=8)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--prompt", type=int, default=768, help="prompt tokens of a pair")
    parser.add_argument("--response", type=int, default=256, help="tokens of each response")
    parser.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    parser.add_argument("--gen-batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--gen-prompt", type=int, default=512)
    parser.add_argument("--gen-tokens", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--peak-tflops", type=float, help="the GPU's dense bf16 peak for MFU")
    bench = Bench(parser.parse_args())
    bench.measure("environment", bench.environment)
    bench.measure("matmul ceiling", bench.matmul_ceiling)
    for name in bench.args.models:
        bench.measure(f"{name} training", bench.training, name)
        bench.measure(f"{name} generation", bench.generation, name)
    Console().print(bench.table())
    for error in bench.results["errors"]:
        print(f"[bench_gpu] error in {error['name']}: {error['error'][:300]}")
    return 1 if bench.results["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
