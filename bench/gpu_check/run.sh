#!/usr/bin/env bash
# The GPU check: what the project does on a machine with an NVIDIA GPU, in one command from the project's root:
#
#     bash bench/gpu_check/run.sh [OUT]        # OUT: where the results go (default bench/results/gpu_check)
#
# Steps, each under a time limit, a failed one not stopping the next, each with its log in OUT/<step>.log:
#   setup  with network, scripts/setup.sh: the venv and what the project needs, from the package index;
#          offline (a lent GPU machine: no network, 64 MiB carried), setup_offline.sh: a venv over the image's
#          own torch and CUDA with the wheels of `make gpu-bundle` (docs/gpu.md, "Offline, on a lent GPU machine");
#   env    the GPU, the driver and the versions (nvidia-smi, torch);
#   bench  bench_gpu.py: the preference trainer against TRL's DPOTrainer and decoding against HF generate,
#          at SmolLM2-135M's and Llama-3.2-1B's shapes, with tokens/s, MFU and peak memory (OUT/bench.json);
#   tests  `make test-gpu`'s tests: the training, critic, ranking and generation unit tests on the GPU and the
#          small project's `dvc repro` through evaluate_policy@backend-sweet (its files under OUT/pytest);
# then summary.py gathers every figure, each step's verdict and where each stage's models ran into
# OUT/summary.json and prints it.
#
# Offline when GPU_CHECK_OFFLINE=1, or unset and bench/gpu_check/bundle/ holds a bundle (=0: never); then
# GPU_CHECK_PYTHON names the image's python (default python3). Time limits in seconds, GPU_CHECK_<STEP>_S:
# with network setup 1800, env 120, bench 900, tests 2400; offline 75, 25, 180, 240 (8 min 40 s in all: a lent
# machine's command runs at most 10 minutes). GPU_CHECK_CPU=1 runs the check's CPU half, on a machine without
# a GPU: env does not ask for CUDA, bench runs its `tiny` shape on the CPU, tests their CPU and emulated-device
# half (the offline rehearsal, docs/gpu.md).
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
    echo "{\"step\": \"$name\", \"rc\": $rc, \"timed_out\": $([ $rc = 124 ] || [ $rc = 137 ] && echo true || echo false), \"seconds\": $((SECONDS - started))}" >>"$OUT/steps.jsonl"
    echo "[gpu_check] $name: exit $rc in $((SECONDS - started))s"
    tail -n 3 "$OUT/$name.log"
}

offline=${GPU_CHECK_OFFLINE:-$(ls bench/gpu_check/bundle/wheels-*.tar.xz >/dev/null 2>&1 && echo 1 || echo 0)}
cpu=${GPU_CHECK_CPU:-0}
if [ "$offline" = 1 ]; then
    PY=${GPU_CHECK_VENV:-/tmp/sweetflow-gpu-venv}/bin/python
    export PATH="$(dirname "$PY"):$PATH" # the stages' `python` and `dvc`, as the Makefile's PATH gives them
    step setup "${GPU_CHECK_SETUP_S:-75}" bash bench/gpu_check/setup_offline.sh
    limits=(25 180 240)
else
    PY=.venv/bin/python
    step setup "${GPU_CHECK_SETUP_S:-1800}" bash scripts/setup.sh
    limits=(120 900 2400)
fi

env_s=${GPU_CHECK_ENV_S:-${limits[0]}} bench_s=${GPU_CHECK_BENCH_S:-${limits[1]}} tests_s=${GPU_CHECK_TESTS_S:-${limits[2]}}
step env "$env_s" env PY="$PY" CPU="$cpu" bash -c 'nvidia-smi; "$PY" -c "
import os, torch; print(\"torch\", torch.__version__, \"CUDA\", torch.version.cuda, \"available\", torch.cuda.is_available())
for i in range(torch.cuda.device_count()):
    print(i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i))
raise SystemExit(0 if torch.cuda.is_available() or os.environ[\"CPU\"] == \"1\" else 1)"'
bench_args=() test_args=()
if [ "$cpu" = 1 ]; then # the CPU half: the benchmark's `tiny` shape, as tests/integration/test_benches.py runs it
    bench_args=(--device cpu --models tiny --precision fp32 --pairs-per-step 2 --steps 2 --prompt 16 --response 8
        --gen-batches 1 2 --gen-prompt 8 --gen-tokens 4 --rounds 1)
    test_args=(-m "not slow") # pytest takes the last -m: the tests not marked gpu, the gpu ones skipped
fi
step bench "$bench_s" "$PY" bench/gpu_check/bench_gpu.py --out "$OUT/bench.json" --budget $((bench_s - 60)) "${bench_args[@]}"
if [ "$offline" = 1 ]; then
    # `make test-gpu`'s pytest, less its set-up, which goes to the package index (a test holds the two together).
    step tests "$tests_s" "$PY" -m pytest -q -p no:xdist -m gpu -rs tests/unit/rl/test_devices.py \
        tests/integration/test_gpu_pipeline.py --basetemp="$OUT/pytest" "${test_args[@]}"
else
    step tests "$tests_s" make test-gpu PYTEST_ARGS="--basetemp=$OUT/pytest"
fi
timeout 30 "$PY" bench/gpu_check/summary.py "$OUT"
