"""How much freed memory a stage's process keeps in glibc's allocator: up to 1 GiB, for reuse.

Torch frees and allocates the same large buffers (logits, activations, a key/value cache) at every
step; by default each comes from a fresh mmap whose pages the kernel maps and zeroes again: a third of
a tiny model's training step was system time (bench/allocator.py). So the stages let the allocator
serve every block under 1 GiB from its heap and keep what is freed there.

A heap keeps what it is given, though: a real model's tensors vary in size with each batch's lengths,
the freed blocks no longer fit the next requests, and the heap grew step after step (SmolLM2's SWEET-RL
step with the NLL term, which needs about 16 GiB, to 44 GiB by its 111th of 212 steps, three times
slower from swapping; `malloc_trim` released 37 GiB of it at once). So a daemon thread checks the heap
every 10 s and, when more than the 1 GiB is free, hands the free pages back to the system.

Numbers are unchanged (only where memory comes from). Not glibc (macOS, musl): nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
import threading
import time

KEEP_BYTES = 1 << 30
CHECK_SECONDS = 10.0
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


class _Mallinfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (2.33 and later)."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is a glibc with mallopt, mallinfo2 and malloc_trim, else None."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is None or not all(hasattr(libc, f) for f in ("mallopt", "mallinfo2", "malloc_trim")):
        return None
    libc.mallinfo2.restype = _Mallinfo2
    return libc


def trim_above(keep_bytes: int) -> bool:
    """Hand the heaps' free pages back to the system when more than `keep_bytes` are free (all threads'
    arenas together); whether it did.
    `malloc_trim` takes the allocator's locks itself: safe beside threads that allocate."""
    libc = _glibc()
    if libc is None or libc.mallinfo2().fordblks <= keep_bytes:
        return False
    libc.malloc_trim(0)
    return True


def _trim_forever(keep_bytes: int, check_seconds: float) -> None:
    while True:
        time.sleep(check_seconds)
        trim_above(keep_bytes)


def keep_freed_memory(keep_bytes: int = KEEP_BYTES, check_seconds: float = CHECK_SECONDS) -> None:
    """Serve blocks under `keep_bytes` from the heap and keep what is freed there, up to `keep_bytes`
    free: what is over it goes back to the system within `check_seconds`. Call it once, first thing, in
    the process that computes: a process forked from it keeps the settings but not the thread."""
    libc = _glibc()
    if libc is None:
        return
    libc.mallopt(M_MMAP_THRESHOLD, keep_bytes)
    libc.mallopt(M_TRIM_THRESHOLD, keep_bytes)
    threading.Thread(
        target=_trim_forever, args=(keep_bytes, check_seconds), name="trim-freed-memory", daemon=True
    ).start()
