"""A finished run's record: the files of a workspace that `reports/experiments/<name>/` commits.

After `dvc exp run` (or `dvc exp apply <name>`), the workspace holds one run's params, lock and
reports. The record copies them into a folder that git keeps, so that a reader (and
`tests/unit/test_experiments.py`) finds what the experiment ran and what it measured without DVC's cache:

    params.yaml, dvc.lock      what ran
    results.md, summary/       the report stage's table, figures and JSON
    runs/                      each stage's run record (time, machine, versions)
    stages/                    the trained domain's stage metrics and training curves
    evaluations/<method>.json  each method's test metrics

    sweetflow record reports/experiments/smollm2-faithful

The workspace must be exactly its dvc.lock's run: a stage whose outputs or inputs changed since would
mix two runs in one record, so it is refused. A folder's other files (a `tuning/` table, notes) stay;
`progress.md`, which stands in for a record until the run ends, goes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from sweetflow.core.artifacts import is_temporary, replace_dir, temporary_path
from sweetflow.core.errors import InputError
from sweetflow.lineage import dvc_lock_problems
from sweetflow.params import load_params

PROGRESS = "progress.md"


def record_sources(root: Path, domain: str) -> dict[str, Path]:
    """Each entry of the record (its name in the record folder) and where the workspace holds it."""
    reports = root / "reports"
    sources = {
        "params.yaml": root / "params.yaml",
        "dvc.lock": root / "dvc.lock",
        "results.md": reports / "results.md",
        "summary": reports / "summary",
        "runs": reports / "runs",
        "stages": reports / domain / "stages",
    }
    for metrics in sorted((reports / domain).glob("*/metrics.json")):
        sources[f"evaluations/{metrics.parent.name}.json"] = metrics
    return sources


def trained_domain(root: Path, domain: str | None) -> str:
    """The domain whose stages the record keeps: `domain`, or the run's only training domain."""
    trained = load_params(root / "params.yaml").train_domains
    if domain is None:
        if len(trained) != 1:
            raise InputError(f"{root / 'params.yaml'}: train_domains is {trained}: name the record's with --domain")
        return trained[0]
    if domain not in trained:
        raise InputError(f"{root / 'params.yaml'}: train_domains is {trained}, without {domain!r}")
    return domain


def write_record(out: Path, root: Path = Path("."), domain: str | None = None) -> list[str]:
    """Copy the workspace's run at `root` into `out` (created if need be); returns the entries written.

    Everything is copied into a temporary folder beside `out` first (`temporary_path`), so a failed copy (a
    full disk) leaves `out` as it was; each entry then replaces its namesake whole."""
    root, out = Path(root), Path(out)
    sources = record_sources(root, trained_domain(root, domain))
    if missing := [str(path) for path in sources.values() if not path.exists()]:
        raise InputError(
            f"{', '.join(missing)}: not found: a record is made after a run (`dvc exp run`, or `dvc exp apply`)"
        )
    stages = set(yaml.safe_load(sources["dvc.lock"].read_text())["stages"])
    if problems := dvc_lock_problems(root, stages):
        raise InputError(
            f"{root / 'dvc.lock'}: the workspace is not the run its lock records, so a record would mix two runs "
            "(`dvc repro` or `dvc exp apply` first):\n" + "\n".join(problems)
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = temporary_path(out)
    shutil.rmtree(staging, ignore_errors=True)  # a killed earlier call's
    try:
        for name, source in sources.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():  # without what a killed stage left half-written beside its output
                shutil.copytree(source, target, ignore=lambda _, names: [n for n in names if is_temporary(n)])
            else:
                shutil.copy2(source, target)
        for entry in sorted(staging.iterdir()):
            replace_dir(entry, out / entry.name)
        (out / PROGRESS).unlink(missing_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(sources)
