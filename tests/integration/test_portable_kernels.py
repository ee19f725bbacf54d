"""`reproducibility: portable`: the trained stages give the same bytes on two CPU types, and differ without it.

One machine stands in for two, on copies of the reproduced project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml

from sweetflow.core.artifacts import content_hash
from tests.support.project import run

# One machine stands in for two. "avx512" is this CPU as it is; "avx2" caps each library at AVX2, as on a
# CPU without AVX-512: torch's kernels (ATEN_CPU_CAPABILITY), MKL's dispatch (MKL_ENABLE_INSTRUCTIONS, a
# cap that MKL_CBWR does not override) and oneDNN's (ONEDNN_MAX_CPU_ISA). Portable mode sets
# ATEN_CPU_CAPABILITY to avx2 on both, as it does on a real AVX2 machine: for torch's own kernels the
# two stand-ins agree by construction, for MKL's matrix products the test is real. The stand-in must run
# differently without the pin, or the test proves nothing: native mode is checked to differ first.

CPUS = {
    "avx512": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}
TRAINED = {  # stage command -> its output
    ("base_model", "backend"): "models/backend/base",
    ("critic", "backend", "with_info"): "models/backend/critics/with_info",
    ("policy", "backend", "rft"): "models/backend/policies/rft",
}


def train_as(project: Path, cpu: str, mode: str, stages=TRAINED) -> dict[str, str]:
    """Run `stages` in `project` as `cpu` in `mode`; the content hash of each output."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    (project / "params.yaml").write_text(yaml.safe_dump({**params, "reproducibility": mode}, sort_keys=False))
    hashes = {}
    for args, out in stages.items():
        run(
            ["env", *(f"{k}={v}" for k, v in CPUS[cpu].items()), "python", "-m", f"stages.{args[0]}", *args[1:]],
            project,
        )
        hashes[out] = content_hash(project / out)
    return hashes


@pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() != "AVX512", reason="stands in for an AVX2 CPU on an AVX-512 one"
)
def test_portable_mode_gives_two_cpu_types_the_same_trained_models(repro_project: Path, tmp_path: Path):
    projects = {cpu: shutil.copytree(repro_project, tmp_path / cpu, symlinks=True) for cpu in CPUS}
    base = {("base_model", "backend"): TRAINED[("base_model", "backend")]}
    native = {cpu: train_as(project, cpu, "native", base) for cpu, project in projects.items()}
    assert native["avx512"] != native["avx2"], "the stand-in CPUs compute alike even natively: nothing is tested"

    portable = {cpu: train_as(project, cpu, "portable") for cpu, project in projects.items()}
    assert portable["avx512"] == portable["avx2"]
    out = TRAINED[("base_model", "backend")]
    assert portable["avx512"][out] != native["avx512"][out]  # MKL's COMPATIBLE branch: other sums, other bytes
    for cpu, project in projects.items():
        kernels = json.loads((project / "reports/runs/policy@backend-rft.json").read_text())["machine"]["kernels"]
        assert kernels == {
            "mode": "portable",
            "aten_kernels": "AVX2",
            "mkl_branch": 3,
            "aten_cpu_capability": "avx2",
            "mkl_cbwr": "COMPATIBLE",
        }, cpu
