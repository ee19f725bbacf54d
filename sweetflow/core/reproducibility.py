"""Which CPU kernels torch runs, and so which machines give the same bytes (params `reproducibility`).

Two libraries pick their float kernels by the CPU they find, and each pick sums in its own order:
- ATen, torch's own kernels (softmax, norms, reductions, the optimizer's updates), dispatches to
  AVX-512, AVX2 or plain code by the CPU's vector instructions (`ATEN_CPU_CAPABILITY` caps it);
- MKL, which does every fp32 matrix product, picks a code branch per CPU model and vendor
  (`MKL_CBWR` fixes one: its conditional numerical reproducibility).

`native` leaves both to choose: the fastest kernels, the same bytes only on the same CPU type.
`portable` pins ATen to its AVX2 kernels and MKL to its COMPATIBLE branch, the one MKL keeps the
same on Intel and on other vendors' CPUs (its AVX2 branch is for Intel CPUs only: on an AMD CPU
MKL ignores it). Every x86-64 CPU with AVX2 then computes the same bytes, with the same thread
counts (they are params). oneDNN (`ONEDNN_MAX_CPU_ISA`), AMX and bf16 do not take part: torch sends
no fp32 work of these models to oneDNN (measured: docs/performance.md, "Portable mode").

Both libraries read their setting when first used, not when imported, so `pin` works in a stage
that has imported torch but computed nothing; it then checks that both took, and fails loudly if
not (a CPU without AVX2, or a kernel that ran before the pin).
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Literal

from sweetflow.core.errors import InputError

Mode = Literal["native", "portable"]
PORTABLE_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"}
# mkl_cbwr_get's answer for the COMPATIBLE branch (mkl_cbwr.h: MKL_CBWR_COMPATIBLE).
MKL_CBWR_COMPATIBLE, MKL_CBWR_BRANCH = 3, 1


def pin(mode: Mode) -> None:
    """Set this process's (and its children's: servers, evaluation workers) kernel choice for
    `mode`, and check that torch and MKL use it. `native` changes nothing."""
    if mode == "native":
        return
    os.environ.update(PORTABLE_ENV)
    torch = sys.modules.get("torch")
    if torch is None:  # imported later, it reads the environment just set; a stage without torch has no kernels
        return
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != "AVX2":
        raise InputError(
            f"params.yaml: reproducibility: portable, but torch runs its {capability} kernels, not AVX2 (the CPU "
            "lacks AVX2, or a kernel ran before the stage pinned them); set reproducibility: native to run here anyway"
        )
    branch = mkl_branch()
    if branch is not None and branch != MKL_CBWR_COMPATIBLE:
        raise InputError(f"params.yaml: reproducibility: portable, but MKL runs branch {branch}, not COMPATIBLE (3)")


def mkl_branch() -> int | None:
    """MKL's code branch as mkl_cbwr_get says (1: none fixed, 3: COMPATIBLE), or None where torch was
    built without MKL (ARM, macOS): there is no branch to fix. Asking reads MKL_CBWR, as a first
    MKL call would."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.backends.mkl.is_available():
        return None
    library = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"  # MKL is linked into it
    try:
        get = ctypes.CDLL(str(library)).mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return None
    return int(get(MKL_CBWR_BRANCH))


def active() -> dict:
    """What decides this process's float kernels, for its run record: the kernels torch dispatches
    to, MKL's code branch, and the mode they amount to."""
    torch = sys.modules.get("torch")
    capability = torch.backends.cpu.get_cpu_capability() if torch else None
    settings = {name.lower(): os.environ.get(name) for name in PORTABLE_ENV}
    pinned = settings == {name.lower(): value for name, value in PORTABLE_ENV.items()}
    return {
        "mode": "portable" if pinned and capability in ("AVX2", None) else "native",
        "aten_kernels": capability,
        "mkl_branch": mkl_branch(),
        **settings,
    }
