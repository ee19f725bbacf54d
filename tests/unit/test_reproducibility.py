"""sweetflow.core.reproducibility in fresh processes (torch and MKL choose their kernels once per process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from sweetflow.core.params import ParamsError
from sweetflow.params import load_params
from tests.support.project import ROOT, merge, tool_env

AVX512 = torch.backends.cpu.get_cpu_capability() == "AVX512"


def in_fresh_process(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in tool_env().items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


PIN_AFTER_IMPORT = """
import json, torch
from sweetflow.core import reproducibility
{before}
reproducibility.pin({mode!r})
x = torch.randn(64, 64)
(x @ x).softmax(-1)
print(json.dumps(reproducibility.active()))
"""


@pytest.mark.skipif(not AVX512, reason="needs a CPU whose native kernels are not AVX2")
def test_portable_pins_both_libraries_after_torch_is_imported_and_native_leaves_them():
    runs = {mode: in_fresh_process(PIN_AFTER_IMPORT.format(before="", mode=mode)) for mode in ("native", "portable")}
    kernels = {mode: json.loads(run.stdout) for mode, run in runs.items()}
    assert kernels["portable"] == {
        "mode": "portable",
        "aten_kernels": "AVX2",
        "mkl_branch": 3,
        "aten_cpu_capability": "avx2",
        "mkl_cbwr": "COMPATIBLE",
    }
    assert kernels["native"] == {
        "mode": "native",
        "aten_kernels": "AVX512",
        "mkl_branch": 1,
        "aten_cpu_capability": None,
        "mkl_cbwr": None,
    }


@pytest.mark.skipif(not AVX512, reason="needs a CPU whose native kernels are not AVX2")
def test_a_pin_too_late_for_torch_is_a_clear_error_not_silent_native_kernels():
    run = in_fresh_process(PIN_AFTER_IMPORT.format(before="torch.ones(3).sum()", mode="portable"))
    assert run.returncode != 0
    assert "reproducibility: portable, but torch runs its AVX512 kernels, not AVX2" in run.stderr.splitlines()[-1]


def test_the_mode_is_a_checked_param(tmp_path):
    import yaml

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(merge(params, {"reproducibility": "fast"})))
    with pytest.raises(ParamsError, match=r"reproducibility: Input should be 'native' or 'portable'"):
        load_params(tmp_path / "params.yaml")


@pytest.mark.parametrize(
    "change, key",
    [
        ({"training": {"threads": 0}}, "training.threads"),
        ({"agents": {"base": {"threads": 0}}}, "agents.base.threads"),
        ({"agents": {"served_base": {"server": {"threads": 0}}}}, "agents.served_base.server.threads"),
        ({"evaluate": {"policy": {"threads": 0}}}, "evaluate.policy.threads"),
    ],
)
def test_portable_refuses_threads_left_to_the_core_count(tmp_path, change, key):
    import yaml

    params = merge(yaml.safe_load((ROOT / "params.yaml").read_text()), change)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**params, "reproducibility": "native"}))
    load_params(tmp_path / "params.yaml")  # native: torch's default is allowed
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**params, "reproducibility": "portable"}))
    with pytest.raises(ParamsError, match=rf"portable needs fixed thread counts: {key} 0"):
        load_params(tmp_path / "params.yaml")
