"""Hands the pages glibc's allocator holds free back to the system, from a daemon thread of every Python
process that has this folder on PYTHONPATH (`make repro-real-faithful` puts it there).

Why: a CPU training step of a real model allocates and frees tens of GiB of tensors of varying sizes, and
glibc keeps the freed blocks in its heap; fragmented, the heap grew step after step (SWEET-RL with the NLL
term to 44 GiB with swap by its 111th of 212 steps, steps three times slower from swapping) while the step
itself needs about 16. `malloc_trim(0)` returns every free page; it takes the allocator's locks itself, so
it is safe beside the threads that compute, and it changes no value. Not glibc (macOS, musl): nothing.
`SWEETFLOW_MALLOC_TRIM_SECONDS` sets the interval (default 20; the test shortens it).
"""

import ctypes
import os
import threading
import time

SECONDS = float(os.environ.get("SWEETFLOW_MALLOC_TRIM_SECONDS", "20"))


def _trim_forever(malloc_trim) -> None:
    while True:
        time.sleep(SECONDS)
        malloc_trim(0)


_process = ctypes.CDLL(None)  # the symbols the process has loaded: libc's among them
if hasattr(_process, "malloc_trim"):
    threading.Thread(target=_trim_forever, args=(_process.malloc_trim,), name="malloc-trim", daemon=True).start()
