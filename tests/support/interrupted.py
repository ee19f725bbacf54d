"""What tests that kill a training need to see of it."""

from __future__ import annotations

import json
from pathlib import Path

from sweetflow.rl.run_state import PROGRESS


def saved_step(state: Path) -> int:
    """The step of the training state last saved in `state` (0: none yet, or one being replaced by the next)."""
    try:
        return json.loads((state / PROGRESS).read_text())["step"]
    except (FileNotFoundError, json.JSONDecodeError):
        return 0
