"""scripts/malloc_trim: a process with the folder on PYTHONPATH hands its heap's free pages back."""

import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "scripts" / "malloc_trim"

# 2,000 blocks of 100 KB (below glibc's mmap threshold, so in the heap), each followed by a small block that
# stays allocated: once the large ones are freed, the heap is full of holes that glibc does not return itself.
FRAGMENT = textwrap.dedent(
    """
    import ctypes, time
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    def rss_mib():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    blocks, pins = [], []
    for _ in range(2000):
        block = libc.malloc(100_000)
        libc.memset(block, 1, 100_000)
        blocks.append(block)
        pins.append(libc.malloc(64))
    before = rss_mib()
    for block in blocks:
        libc.free(block)
    time.sleep(1.0)
    print(before, rss_mib())
    """
)


def resident_mib(with_trim: bool) -> tuple[int, int]:
    env = {**os.environ, "SWEETFLOW_MALLOC_TRIM_SECONDS": "0.1"}
    env.pop("PYTHONPATH", None)
    if with_trim:
        env["PYTHONPATH"] = str(FOLDER)
    out = subprocess.run([sys.executable, "-c", FRAGMENT], env=env, capture_output=True, text=True, check=True)
    before, after = map(int, out.stdout.split())
    return before, after


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_freed_heap_pages_go_back_only_with_the_folder_on_the_path():
    before, after = resident_mib(with_trim=False)
    assert before >= 190 and after >= before - 60  # glibc alone keeps the holes resident
    before, after = resident_mib(with_trim=True)
    assert before >= 190 and after <= before - 150  # the thread gave the 190 MiB of holes back
