"""sweetflow/core/memory.py: the stages keep freed memory for reuse up to a limit, and hand what is over it back."""

import platform
import subprocess
import sys
import textwrap

import pytest

from sweetflow.core.memory import trim_above

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# In a fresh process with the stages' settings at a given limit: 2,000 heap blocks of 100 KB, each followed by
# a small block that stays allocated, so that once the large ones are freed the heap is full of holes (about
# 190 MiB free) that glibc does not return itself. Prints the resident MiB before the frees and a second after.
FRAGMENT = textwrap.dedent(
    """
    import ctypes, sys, time
    from sweetflow.core.memory import keep_freed_memory
    keep_freed_memory(keep_bytes=int(sys.argv[1]), check_seconds=0.1)
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


def resident_mib(keep_bytes: int) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", FRAGMENT, str(keep_bytes)], capture_output=True, text=True, check=True)
    before, after = map(int, out.stdout.split())
    return before, after


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_freed_memory_under_the_limit_stays_and_over_it_goes_back():
    before, after = resident_mib(keep_bytes=1 << 30)
    assert before >= 190 and after >= before - 60  # 190 MiB free is under 1 GiB: kept for reuse
    before, after = resident_mib(keep_bytes=50 << 20)
    assert before >= 190 and after <= before - 150  # over 50 MiB: the thread gave the holes back


@pytest.mark.skipif(not GLIBC, reason="the settings are glibc's")
def test_nothing_is_trimmed_while_the_free_memory_is_under_the_limit():
    assert not trim_above(1 << 50)
    assert trim_above(-1)  # any free byte is over a negative limit
