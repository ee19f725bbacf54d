"""Sharing DVC's run cache whole: every configuration run here, with its outputs.

`dvc push --run-cache` (DVC 3) pushes the run cache's entries but only the outputs of the lock in the
workspace, and not the metrics and plots of any entry (they are `cache: false`, committed with git).
A teammate whose `params.yaml` names a configuration the origin ran then finds its entry and not its
files, and trains it again. `push_run_cache` pushes the entries and every object they name, so that
the teammate's `dvc pull --run-cache` followed by `dvc repro --pull` restores any configuration run
here without training it.
"""

from __future__ import annotations

from pathlib import Path

from sweetflow.core.errors import StageFailed


def push_run_cache(root: Path | str = ".", remote: str | None = None) -> tuple[int, int]:
    """Push the workspace's outputs, the run cache's entries and every output those entries name to
    `remote` (the default remote when None). Returns (entries, objects) pushed or already there."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        repo.push(remote=remote, run_cache=True)
        runs = Path(repo.stage_cache.cache_dir)
        entries = [(value.parent.name, value.name) for value in runs.glob("*/*/*") if value.is_file()]
        # An entry's outputs, its metrics and plots included, as the stage it restores reads them.
        used = repo.stage_cache.get_used_objs(entries)
        objects = {obj for objs in used.values() for obj in objs}
        result = repo.cloud.push(objects, remote=remote)
        if result.failed:
            missing = ", ".join(sorted(str(h) for h in result.failed)[:5])
            raise StageFailed(f"{len(result.failed)} run-cache objects could not be pushed (e.g. {missing})")
    return len(entries), len(objects)
