#!/usr/bin/env bash
# Set up everything the pipeline and its tests need, idempotently: a venv with the project and its
# Python packages. Re-running is cheap: packages are reinstalled only when pyproject.toml changes.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi

stamp=.venv/.sweetflow-setup
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    # torch first and pinned: 2.13.0 is the CPU wheel here; anything newer pulls a CUDA build.
    .venv/bin/python -m pip install --quiet torch==2.13.0
    .venv/bin/python -m pip install --quiet -e '.[dev]'
    touch "$stamp"
fi

# DVC records commits; a fresh machine may have no git identity.
if [ -d .git ] && ! git config user.email >/dev/null; then
    git config user.email "sweetflow@localhost"
    git config user.name "sweetflow"
fi
