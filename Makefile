# The two entry points of the README. Each sets up what it needs first.
# Stage commands call `python`: the venv's must come first on PATH.
export PATH := $(CURDIR)/.venv/bin:$(PATH)
.PHONY: setup repro repro-frontend test test-slurm bench

setup:
	bash scripts/setup.sh

repro: setup
	dvc repro

# The frontend's trained chain (docs/frontend.md), as a DVC experiment beside the default: the
# backend's trained stages leave the DAG, so the knobs both domains share change none of its
# results, and the default's params.yaml and dvc.lock come back with `git restore` after.
# It stops at critic@frontend-with_info: the tiny model never answers, so no dialogue fits its
# context (docs/frontend.md, with what each stage costs; generation dominates).
FRONTEND_TRAINED := -S 'train_domains=[frontend]' \
	-S frontend.tasks.n_train=200 -S frontend.tasks.n_val=30 -S frontend.tasks.n_test=60 \
	-S frontend.model.vocab_size=2048 -S frontend.model.max_length=1792 -S frontend.model.epochs=2 \
	-S agents.base.max_new_tokens=2048 -S candidates.policy.max_new_tokens=2048 \
	-S evaluate.policy.max_new_tokens=2048 -S rollout.max_tasks=40 -S candidates.n=8 \
	-S critic_check.states=20 -S critic_check.rollouts=1 \
	-S critics.with_info.epochs=2 -S critics.with_info.warmup_epochs=1 \
	-S critics.no_info.epochs=2 -S critics.no_info.warmup_epochs=1 \
	-S policies.rft.epochs=1 -S policies.mtdpo.epochs=1 -S policies.rft.min_reward.frontend=0.3

repro-frontend: setup
	dvc exp run -n frontend-trained $(FRONTEND_TRAINED)

test: setup
	python -m pytest -n 2 --dist loadfile -q

# The DAG through real SLURM jobs (tests marked slurm, which `make test` leaves out): installs the
# executor plugin, starts scripts/slurm.sh's single-node cluster if it is down (root, Debian) and
# stops it after. About 7 minutes (14 jobs, one at a time on a 2-core node).
test-slurm:
	SWEETFLOW_EXTRAS=slurm bash scripts/setup.sh
	python -m pytest -q -p no:xdist -m slurm tests/integration/test_slurm.py

bench: setup
	python bench/score_throughput.py
