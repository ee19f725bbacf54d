#!/usr/bin/env bash
# The GPU check: what the project does on a machine with an NVIDIA GPU, in one command from the project's root:
#
#     bash bench/gpu_check/run.sh [OUT]        # OUT: where the results go (default bench/results/gpu_check)
#
# Steps, each under a time limit, a failed one not stopping the next, each with its log in OUT/<step>.log:
#   setup  scripts/setup.sh: the venv and what the project needs, from the package index (a machine without
#          network: PIP_NO_INDEX=1 PIP_FIND_LINKS=<a folder of wheels>, which pip reads, and nothing else changes);
#   env    the GPU, the driver and the versions (nvidia-smi, torch);
#   bench  bench_gpu.py: the preference trainer against TRL's DPOTrainer and decoding against HF generate,
#          at SmolLM2-135M's and Llama-3.2-1B's shapes, with tokens/s, MFU and peak memory (OUT/bench.json);
#   tests  `make test-gpu`: the training, critic, ranking and generation unit tests on the GPU and the small
#          project's `dvc repro` through evaluate_policy@backend-sweet (its files under OUT/pytest);
# then summary.py gathers every figure, each step's verdict and where each stage's models ran into
# OUT/summary.json and prints it. Time limits in seconds: GPU_CHECK_BENCH_S (900), GPU_CHECK_TESTS_S (2400).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=$(mkdir -p "${1:-bench/results/gpu_check}" && cd "${1:-bench/results/gpu_check}" && pwd)
rm -f "$OUT/steps.jsonl"

step() { # step NAME SECONDS COMMAND...: the command under `timeout`, its log, a line of steps.jsonl
    local name=$1 limit=$2 started=$SECONDS rc
    shift 2
    echo "[gpu_check] $name (at most ${limit}s): $*"
    timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    echo "{\"step\": \"$name\", \"rc\": $rc, \"timed_out\": $([ $rc = 124 ] && echo true || echo false), \"seconds\": $((SECONDS - started))}" >>"$OUT/steps.jsonl"
    echo "[gpu_check] $name: exit $rc in $((SECONDS - started))s"
    tail -n 3 "$OUT/$name.log"
}

step setup 1800 bash scripts/setup.sh
step env 120 bash -c 'nvidia-smi; .venv/bin/python -c "
import torch; print(\"torch\", torch.__version__, \"CUDA\", torch.version.cuda, \"available\", torch.cuda.is_available())
for i in range(torch.cuda.device_count()):
    print(i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i))
raise SystemExit(0 if torch.cuda.is_available() else 1)"'
step bench "${GPU_CHECK_BENCH_S:-900}" .venv/bin/python bench/gpu_check/bench_gpu.py --out "$OUT/bench.json" \
    --budget $((${GPU_CHECK_BENCH_S:-900} - 60))
step tests "${GPU_CHECK_TESTS_S:-2400}" make test-gpu PYTEST_ARGS="--basetemp=$OUT/pytest"
.venv/bin/python bench/gpu_check/summary.py "$OUT"
