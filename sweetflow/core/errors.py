"""Errors in what a user gave us (params, input files): reported as one clear line, no traceback."""

from __future__ import annotations

import errno
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from sweetflow.core.secrets import redact


class InputError(ValueError):
    """Bad input; the message names the file, row and field (or params key) at fault."""


class StageFailed(RuntimeError):
    """The stage ran but its result is not acceptable (e.g. too many failed episodes)."""


# Less room than this left where a write failed: the disk is full, whatever the error says.
FULL_BYTES = 1 << 20


def disk_full(e: BaseException, path: Path | str | None = None) -> bool:
    """Whether `e` comes from a full disk: an OSError ENOSPC, a library's error that quotes one (Rust's
    "No space left on device (os error 28)"), or, as polars may hide the cause in its own words
    ("Invalid thrift: transport error"), any error while `path`'s filesystem has under 1 MiB left."""
    if (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "(os error 28)" in str(e):
        return True
    return path is not None and _free_bytes(path) < FULL_BYTES


def _free_bytes(path: Path | str) -> int:
    where = next((p for p in [Path(path).absolute(), *Path(path).absolute().parents] if p.exists()), Path("/"))
    return shutil.disk_usage(where).free


def disk_full_error(path: Path | str) -> StageFailed:
    """The one line for a full disk while writing `path`, with the room left where it lives."""
    free = _free_bytes(path) / 2**10
    return StageFailed(f"{path}: no space left on device while writing it ({free:.0f} KiB free on its filesystem)")


def run_stage(main: Callable[[], None]) -> None:
    """Entry point of `python -m stages.<name>`: bad input exits 2, a failed stage 1 (a full disk
    included), with the message alone (no traceback), redacted of secrets. A SIGTERM (a scheduler's
    stop, a `kill`) is an exit like any other, 143, so that what the stage finished is kept first (an
    episode stage's finished episodes; a training's last kept state is on disk already)."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        main()
    except (InputError, FileNotFoundError) as e:
        print(redact(f"error: {e}"), file=sys.stderr)
        sys.exit(2)
    except StageFailed as e:
        print(redact(f"stage failed: {e}"), file=sys.stderr)
        sys.exit(1)
    except Exception as e:
        if not disk_full(e):
            raise
        # Written outside a stage output (which names itself, see artifacts.stage_output).
        where = getattr(e, "filename", None) or "a file"
        print(redact(f"stage failed: {where}: no space left on device while writing it"), file=sys.stderr)
        sys.exit(1)


def _exit_on_sigterm(signum: int, frame) -> None:
    print("stopped by SIGTERM", file=sys.stderr)
    sys.exit(128 + signum)
