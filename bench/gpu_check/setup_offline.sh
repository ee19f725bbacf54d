#!/usr/bin/env bash
# The GPU check's set-up on a machine without network (run.sh's `setup` step when a bundle is there): a venv
# that sees the image's own torch and CUDA, with the bundle's wheels for what the image lacks (bundle.py,
# `make gpu-bundle`) and the project itself. Nothing is fetched: PIP_NO_INDEX=1 throughout.
#
#     bash bench/gpu_check/setup_offline.sh      # prints the venv's python last
#
# GPU_CHECK_PYTHON: the image's python, the one with torch (default python3); GPU_CHECK_VENV: the venv made
# (default /tmp/sweetflow-gpu-venv, outside the tree: the project's own .venv is never touched).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=${GPU_CHECK_PYTHON:-python3}
VENV=${GPU_CHECK_VENV:-/tmp/sweetflow-gpu-venv}
WHEELS=$VENV.wheels
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1

tag=$("$PY" -c 'import sys; print(f"cp{sys.version_info.major}{sys.version_info.minor}")')
bundle=bench/gpu_check/bundle/wheels-$tag.tar.xz
if [ ! -f "$bundle" ]; then
    echo "setup_offline: no $bundle for $PY ($tag); bench/gpu_check/bundle/ holds: $(ls bench/gpu_check/bundle 2>&1)" >&2
    exit 1
fi
echo "image's python: $PY ($("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])'))"

# A venv that sees what the image's python sees, after its own packages (so a bundle's newer version wins).
# Not --system-site-packages: that adds the *base* interpreter's folders, and the image's python is itself a
# venv's (/opt/torch/.venv), whose torch is in none of them. Instead a .pth file runs site.addsitedir on each
# folder of the image's python (its own .pth files are read too).
if "$PY" -m venv --clear "$VENV"; then
    pip=("$VENV/bin/python" -m pip)
else # a Python without ensurepip (Debian's and Ubuntu's, short of pythonX.Y-venv): the image's pip installs into it
    "$PY" -m venv --clear --without-pip "$VENV"
    pip=("$PY" -m pip --python "$VENV/bin/python")
fi
site_dir=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -d "$site_dir/setuptools" ]; then # a venv of Python 3.11 gets setuptools 65, which would hide the image's
    "${pip[@]}" uninstall --quiet --yes setuptools # (torch asks for >=77); 3.12's venvs get none
fi
"$PY" - >"$site_dir/image-site.pth" <<'EOF'
import site, sys
for folder in dict.fromkeys(p for p in sys.path if p.endswith(("site-packages", "dist-packages"))):
    print(f"import site; site.addsitedir({folder!r})")
EOF
echo "torch the check uses: $("$VENV/bin/python" -c 'import torch
print(torch.__version__, "CUDA", torch.version.cuda, "available", torch.cuda.is_available(), "at", torch.__file__)')"

rm -rf "$WHEELS" && mkdir -p "$WHEELS"
"$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' "$bundle" "$WHEELS"
echo "bundle: $bundle, $(ls "$WHEELS" | wc -l) wheels"

# Resolved against the image: pip keeps each package the image has where it meets the pins' needs and installs the
# bundle's otherwise; a need that neither meets fails here, naming it. Then, so that the check still runs, the
# bundle goes in as it is (--no-deps), and `pip check` below says what stays unmet.
install=("${pip[@]}" install --quiet --no-index --find-links "$WHEELS")
if ! "${install[@]}" -r bench/gpu_check/wheels.txt; then
    echo "setup_offline: the bundle and the image do not meet every need (above); installing the bundle with --no-deps"
    "${install[@]}" --no-deps "$WHEELS"/*.whl
fi
# The project from its folder, as an editable install has it, but by a .pth file: an editable install builds with
# setuptools, and a venv's own (3.11's ensurepip brings 65, no bdist_wheel) or the image's may not do. Its
# dependencies are those above (pyproject.toml's playwright and snakemake stay out: wheels.txt says why).
pwd >"$site_dir/sweetflow-project.pth"
echo "pip check (what the image's packages and the bundle leave unmet; the image's own unrelated ones too):"
"${pip[@]}" check | sed 's/^/  /' || true
"$VENV/bin/python" - <<'EOF'
from importlib.metadata import version

import torch

import sweetflow.rl.preference  # noqa: F401  the trainer: transformers, accelerate, dvclive

names = ("transformers", "accelerate", "dvc", "polars", "trl")
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}),", ", ".join(f"{n} {version(n)}" for n in names))
EOF
echo "$VENV/bin/python"
