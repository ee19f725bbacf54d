"""Errors in what a user gave us (params, input files): reported as one clear line, no traceback."""

from __future__ import annotations

import sys
from typing import Callable

from sweetflow.secrets import redact


class InputError(ValueError):
    """Bad input; the message names the file, row and field (or params key) at fault."""


class StageFailed(RuntimeError):
    """The stage ran but its result is not acceptable (e.g. too many failed episodes)."""


def run_stage(main: Callable[[], None]) -> None:
    """Entry point of `python -m stages.<name>`: bad input exits 2, a failed stage 1, with the message
    alone (no traceback), redacted of secrets."""
    try:
        main()
    except (InputError, FileNotFoundError) as e:
        print(redact(f"error: {e}"), file=sys.stderr)
        sys.exit(2)
    except StageFailed as e:
        print(redact(f"stage failed: {e}"), file=sys.stderr)
        sys.exit(1)
