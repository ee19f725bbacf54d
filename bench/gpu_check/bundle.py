"""GPU check, preparation on a CPU machine with network: the wheels that a lent GPU machine lacks, in one file
that travels with the project (docs/gpu.md, "Offline, on a lent GPU machine").

A lent machine reaches no package index, and what travels with the working tree is at most 64 MiB. Its image
has a CUDA torch and much of what we need; `wheels.txt` beside this file pins the rest (its header says which
and why), and `build` downloads exactly those wheels for the image's Python and packs them into
`bundle/wheels-cpXY.tar.xz`, which run.sh installs with no index. Subcommands:

    .venv/bin/python bench/gpu_check/bundle.py pins     # rewrite wheels.txt from this venv's versions
    .venv/bin/python bench/gpu_check/bundle.py build [--python-version 3.12]  # `make gpu-bundle`
    .venv/bin/python bench/gpu_check/bundle.py size     # the carry's size against the limit
    .venv/bin/python bench/gpu_check/bundle.py image    # pins of what the image holds (a stand-in's)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WHEELS = HERE / "wheels.txt"
BUNDLE = HERE / "bundle"
LIMIT = 64 * 2**20  # the device tool's: the working tree that travels, carried paths included

# Requirements of pyproject.toml the GPU check does without. Each is a large download the check never uses.
LEFT_OUT = {
    "playwright": "frontend rendering (a 40 MB wheel, and Chromium, which the image lacks); the check runs the backend",
    "snakemake": "the Snakemake engine and its closure (pulp alone is 16 MB); the check drives DVC",
    "ruff": "format and lint, not tests",
}
# The CUDA build is the image's: a wheel of ours would be the CPU build, and far over the limit.
TORCH_STACK = ("torch", "triton", "nvidia-", "cuda-")
# What the lent GPU machines' image ('cuda', Python 3.12.3, torch 2.11.0+cu130) holds, as read there on 2026-11-17.
IMAGE = set(
    """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-ml-py onnx onnx-ir onnxruntime onnxscript opencv-python-headless
optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy
portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks
pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil
pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy
seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers statsmodels sympy
tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch
torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer
typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split()
)
# The image's versions where they are known (its pip list); one that a requirement in the closure refuses is carried.
IMAGE_VERSIONS = {
    "accelerate": "1.15.0",
    "huggingface-hub": "1.33.0",
    "numpy": "2.5.2",
    "safetensors": "0.8.0",
    "tokenizers": "0.23.2",
    "transformers": "5.17.0",
}
# Carried although the image has it, each for a reason its version alone does not show.
ALWAYS_CARRY = {
    "typing-extensions": "the first GPU run found the image's older than pydantic needs",
    "tokenizers": "the image's 0.23.2 asks for huggingface-hub<2, which our transformers needs at 2.4 (the rehearsal)",
}
# The platforms a wheel may be built for: pip matches manylinux_2_N exactly, so each N up to the image's glibc.
PLATFORMS = ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"]


def roots() -> list[Requirement]:
    """pyproject.toml's dependencies and its `dev` extra (the tests), less LEFT_OUT."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]]
    return [r for r in requirements if canonicalize_name(r.name) not in LEFT_OUT]


def closure() -> tuple[dict[str, str], list[Requirement]]:
    """Every distribution the roots need in this interpreter's environment, with the version installed, and
    every requirement met on the way (the roots' and each distribution's, extras followed)."""
    versions: dict[str, str] = {}
    extras: dict[str, set[str]] = {}
    met: list[Requirement] = []
    todo = roots()
    while todo:
        requirement = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        met.append(requirement)
        name = canonicalize_name(requirement.name)
        if name in versions and set(requirement.extras) <= extras[name]:
            continue
        dist = importlib.metadata.distribution(name)
        versions[name] = dist.version.split("+")[0]
        extras.setdefault(name, set()).update(requirement.extras)
        for line in dist.requires or []:
            needed = Requirement(line)
            if needed.marker and not any(needed.marker.evaluate({"extra": e}) for e in extras[name] | {""}):
                continue
            needed.marker = None  # evaluated here, with this distribution's extras
            todo.append(needed)
    return versions, met


def carried(versions: dict[str, str], met: list[Requirement]) -> dict[str, str]:
    """The part of the closure that travels (the rule in wheels.txt's header)."""
    refused = {
        name
        for name, version in IMAGE_VERSIONS.items()
        for r in met
        if canonicalize_name(r.name) == name and not r.specifier.contains(version, prereleases=True)
    }
    return {
        name: version
        for name, version in sorted(versions.items())
        if not name.startswith(TORCH_STACK) and (name not in IMAGE or name in refused | set(ALWAYS_CARRY))
    }


HEADER = (
    """\
# The wheels a lent GPU machine lacks, installed by bench/gpu_check/run.sh from the bundle that
# `make gpu-bundle` builds (docs/gpu.md, "Offline, on a lent GPU machine"). Written by
# `.venv/bin/python bench/gpu_check/bundle.py pins`, again whenever the venv resolves other versions.
#
# The rule: every distribution that pyproject.toml's dependencies and its `dev` extra need, followed
# through their requirements and extras as this project's CPU venv resolved them, at the version
# installed there, except
#   - the torch stack (torch, triton, nvidia-*, cuda-*): the image's CUDA build is used;
#   - what the image already holds (bundle.py's IMAGE), unless its version there is known and a
#     requirement in the closure refuses it (transformers: the image's 5.17 < our 5.24; huggingface-hub:
#     its 1.33 < 2.4, which our transformers needs), or it is carried for another reason:
"""
    + "".join(f"#       {name}: {why}\n" for name, why in ALWAYS_CARRY.items())
    + "#   - requirements the check does without:\n"
    + "".join(f"#       {name}: {why}\n" for name, why in LEFT_OUT.items())
)


def pins(path: Path = WHEELS) -> dict[str, str]:
    """`name==version` lines of a wheel list, by name."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {canonicalize_name(name): version for name, version in (line.split("==") for line in lines if line)}


def write_pins(_args) -> int:
    versions, met = closure()
    body = "".join(f"{name}=={version}\n" for name, version in carried(versions, met).items())
    WHEELS.write_text(HEADER + body)
    print(f"{WHEELS.relative_to(ROOT)}: {body.count(chr(10))} wheels of a closure of {len(versions)}")
    return 0


def print_image(_args) -> int:
    """What the image holds of the closure, at the image's version where that is known and older than ours (what
    the bundle must get past), else at ours: a stand-in for the image on a CPU machine (docs/gpu.md's rehearsal),
    with the CPU torch beside it."""
    versions, _ = closure()
    for name, version in versions.items():
        if name in IMAGE and name not in ("torch", "triton"):
            print(f"{name}=={min(version, IMAGE_VERSIONS.get(name, version), key=Version)}")
    return 0


def travelling() -> int:
    """Bytes of the working tree that travels to the device machine: tracked files and untracked ones git does
    not ignore (the bundle, ignored, is counted apart)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    files = (ROOT / name for name in listed.decode().split("\0") if name)
    return sum(f.stat().st_size for f in files if f.is_file() and not f.is_symlink())


def check_size(project: int, bundle: Path, limit: int = LIMIT) -> int:
    """The project's and the bundle folder's bytes against the limit: 0, or 1 with what to cut."""
    wheels = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file()) if bundle.exists() else 0
    total = project + wheels
    mib = lambda n: f"{n / 2**20:.1f} MiB"  # noqa: E731
    line = f"project {mib(project)} + bundle {mib(wheels)} ({bundle.name}/) = {mib(total)}, limit {mib(limit)}"
    if total > limit:
        print(f"TOO LARGE to travel: {line}; leave wheels out (wheels.txt) or files out of the tree", file=sys.stderr)
        return 1
    print(f"fits: {line}")
    return 0


def stored(wheel: Path) -> bytes:
    """The wheel with its members stored, not deflated: xz then compresses across them, and far better.
    pip installs it as any wheel (RECORD's hashes are of the members' contents, which do not change)."""
    out = io.BytesIO()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for member in src.infolist():
            copy = zipfile.ZipInfo(member.filename, member.date_time)
            copy.external_attr = member.external_attr  # the permissions: scripts stay executable
            dst.writestr(copy, src.read(member), zipfile.ZIP_STORED)
    return out.getvalue()


def pack(wheels: list[Path], out: Path, preset: int) -> None:
    partial = out.with_name(out.name + ".partial")  # a killed build leaves no bundle that looks whole
    with tarfile.open(partial, "w:xz", preset=preset) as tar:
        for wheel in sorted(wheels):
            data = stored(wheel)
            info = tarfile.TarInfo(wheel.name)
            info.size, info.mode = len(data), 0o644  # mtime 0: the same wheels pack to the same bytes
            tar.addfile(info, io.BytesIO(data))
    partial.replace(out)


def is_pure(name: str) -> bool:
    """Whether this venv's copy of a distribution is a pure-Python wheel (tag py3-none-any or alike)."""
    lines = (importlib.metadata.distribution(name).read_text("WHEEL") or "").splitlines()
    return all(line.endswith("-none-any") for line in lines if line.startswith("Tag:"))


def build(args) -> int:
    wanted = pins()
    tag = "cp" + args.python_version.replace(".", "")
    glibc_minor = int(args.glibc.split(".")[1])
    platforms = PLATFORMS + [f"manylinux_2_{n}_x86_64" for n in range(5, glibc_minor + 1)]
    with tempfile.TemporaryDirectory(prefix="gpu-wheels-") as tmp:
        download = Path(args.download_dir or tmp)
        started = time.perf_counter()
        pure = [f"{name}=={version}" for name, version in wanted.items() if is_pure(name)]
        built = [f"{name}=={version}" for name, version in wanted.items() if not is_pure(name)]
        pip = [sys.executable, "-m", "pip", "--quiet"]
        # Pure Python: any Python takes it, and `pip wheel` builds the few published as sources only (antlr4's 4.9.3).
        subprocess.run([*pip, "wheel", "--no-deps", "-w", str(download), *pure], check=True)
        # Compiled: the image's Python and platform, published wheels only.
        command = [*pip, "download", "--no-deps", "--only-binary=:all:", "--implementation", "cp"]
        command += ["--python-version", args.python_version, "-d", str(download)]
        command += [arg for p in platforms for arg in ("--platform", p)]
        subprocess.run([*command, *built], check=True)
        # The pinned version of each (a kept --download-dir may hold others: two of one name stop pip's install).
        pinned = {(name, Version(version)) for name, version in wanted.items()}
        files = [f for f in sorted(download.glob("*.whl")) if parse_wheel_filename(f.name)[:2] in pinned]
        missing = sorted(set(wanted) - {parse_wheel_filename(f.name)[0] for f in files})
        if missing:
            print(f"no wheel downloaded for: {missing}", file=sys.stderr)
            return 1
        downloaded = sum(f.stat().st_size for f in files)
        print(f"downloaded {len(files)} wheels, {downloaded / 2**20:.1f} MiB, in {time.perf_counter() - started:.0f}s")
        BUNDLE.mkdir(exist_ok=True)
        out = BUNDLE / f"wheels-{tag}.tar.xz"
        for other in BUNDLE.glob("wheels-*"):  # the folder travels whole: one bundle at a time
            print(f"removing {other.relative_to(ROOT)}")
            other.unlink()
        started = time.perf_counter()
        pack(files, out, args.preset)
    print(
        f"packed {out.relative_to(ROOT)}: {out.stat().st_size / 2**20:.1f} MiB in {time.perf_counter() - started:.0f}s"
    )
    return check_size(travelling(), BUNDLE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("pins", help="rewrite wheels.txt from this venv").set_defaults(run=write_pins)
    commands.add_parser("image", help="print the image's part of the closure").set_defaults(run=print_image)
    size = commands.add_parser("size", help="the carry's size against the 64 MiB limit")
    size.set_defaults(run=lambda _args: check_size(travelling(), BUNDLE))
    b = commands.add_parser("build", help="download wheels.txt's wheels and pack them into bundle/")
    b.add_argument("--python-version", default="3.12", help="the image's Python (3.12.3 on the lent machines)")
    b.add_argument("--glibc", default="2.35", help="the newest manylinux_2_N a wheel may need")
    b.add_argument("--preset", type=int, default=9, help="xz's level")
    b.add_argument("--download-dir", help="keep the downloaded wheels here (default: a temporary folder)")
    b.set_defaults(run=build)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
