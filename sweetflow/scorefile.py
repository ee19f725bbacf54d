"""Score a JSONL of trajectories made elsewhere, in ColBench's output shape.

Each line is an object with `task` (a ColBench task) and `answer` (the agent's final answer). How a
domain's rows are scored is its `Domain.score_file` (`sweetflow.backend.scorefile`: in the sandbox;
`sweetflow.frontend.scorefile`: rendered and compared); this checks the output first and writes
the scored rows.
"""

from __future__ import annotations

from pathlib import Path

from sweetflow.core.errors import InputError
from sweetflow.core.inputs import FileLimits
from sweetflow.core.params import DomainParams
from sweetflow.domain import get_domain

# The backend's scoring settings of ColBench's own evaluator (`sweetflow score --rules official`): its answer
# filter on, each answer's code exec'd inside a function.
OFFICIAL_RULES = {"answer_filter": "always", "namespace": "function"}


def check_writable(out: Path) -> None:
    """Fail before any scoring on an `out` that cannot be written (a missing or read-only directory,
    a directory in its place): scoring can take an hour, and its results would be lost at the end."""
    existed = out.exists()
    try:
        open(out, "ab").close()
    except OSError as e:
        raise InputError(f"{out}: cannot be written ({e.strerror})") from None
    if not existed:
        out.unlink()


def score_file(
    path: Path | str,
    domain: str,
    out: Path | None,
    p: DomainParams,
    stored: dict | None = None,
    limits: FileLimits | None = None,
) -> dict:
    """Score the file's rows as `domain` scores them with its section `p` (the backend in the sandbox,
    with the reference checks `stored` by task id, `sweetflow.backend.tasks.table.stored_references`,
    whose references are not run again; the frontend rendered and compared); write one row per line
    to `out` (Parquet for a .parquet name, else JSONL) if given; return the summary."""
    if out is not None:
        check_writable(out)
    summary, rows = get_domain(domain).score_file(path, p, stored or {}, limits)
    if out is not None:
        if Path(out).suffix == ".parquet":
            rows.write_parquet(out)
        else:
            rows.write_ndjson(out)
    return summary
