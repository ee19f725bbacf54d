"""What a training run keeps while it trains, so that a run killed mid-way resumes where it last saved
instead of from its first step: on a real model one run can take longer than the machine is held.

The state is accelerate's (`save_state`: weights, optimiser, every process's random generators; sharded
as ZeRO-3 or FSDP shard them), the loop's counters (`progress.json`) and the run's DVCLive curves as they
were at that step (`live/`), so that a resumed run's curves hold each step once. It is written beside its
place and renamed in: a kill while saving leaves the previous state whole.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from accelerate import Accelerator

from sweetflow.core.artifacts import replace_dir, write_json

PROGRESS, ACCELERATE, LIVE = "progress.json", "accelerate", "live"


def _staging(directory: Path) -> Path:
    """Where a state is written before it replaces `directory`: one name for every process."""
    return directory.with_name(f".{directory.name}.saving")


def save_run_state(accelerator: Accelerator, directory: Path, progress: dict, log_dir: Path) -> None:
    """Keep the run's state at this step in `directory`. Every process calls it: each saves its share."""
    staging = _staging(directory)
    if accelerator.is_main_process:
        shutil.rmtree(staging, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(staging / ACCELERATE), safe_serialization=False)  # tied embeddings share storage
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        shutil.copytree(log_dir, staging / LIVE)
        write_json(staging / PROGRESS, progress)  # last: a staging directory without it is incomplete
        replace_dir(staging, directory)
    accelerator.wait_for_everyone()


def load_run_state(accelerator: Accelerator, directory: Path, log_dir: Path) -> dict | None:
    """Restore the run saved in `directory` into the prepared model and optimiser, and its curves into
    `log_dir`; its progress, or None when nothing was saved there."""
    if not (directory / PROGRESS).is_file():
        return None
    accelerator.load_state(str(directory / ACCELERATE))
    if accelerator.is_main_process:
        shutil.rmtree(log_dir, ignore_errors=True)
        shutil.copytree(directory / LIVE, log_dir)
    accelerator.wait_for_everyone()
    return json.loads((directory / PROGRESS).read_text())


def remove_run_state(accelerator: Accelerator, directory: Path) -> None:
    """Once the run has finished: nothing is left to resume (nor a save a kill cut short)."""
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(_staging(directory), ignore_errors=True)
