# The two entry points of the README. Each sets up what it needs first.
# Stage commands call `python`: the venv's must come first on PATH.
export PATH := $(CURDIR)/.venv/bin:$(PATH)
.PHONY: setup repro test bench

setup:
	bash scripts/setup.sh

repro: setup
	dvc repro

test: setup
	python -m pytest -n 2 --dist loadfile -q

bench: setup
	python bench/score_throughput.py
