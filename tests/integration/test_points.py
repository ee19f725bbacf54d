"""`sweetflow experiment --points` for real, on a copy of the reproduced project: a point runs as its own DVC
experiment at its one seed, gives what the whole run gave that seed, and lands in the record; a record that holds
every point runs nothing."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from sweetflow.params import load_params
from sweetflow.points import OUTCOME_COLUMNS, Point, plan, point_file, write_point
from tests.support.project import run
from tests.support.reproduced import copy_of

LEFT = Point("rft", 1)  # the one point the record lacks


def test_a_point_alone_gives_what_the_whole_run_gave_its_seed_and_lands_in_the_record(
    repro_project: Path, tmp_path: Path, monkeypatch
):
    project = copy_of(repro_project, tmp_path / "project")
    (project / "configs" / "experiments").mkdir(parents=True, exist_ok=True)
    experiment = project / "configs" / "experiments" / "backend-only.yaml"
    experiment.write_text("train_domains: [backend]\n")
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-qm", "the reproduced project", "--allow-empty"], project)
    record = project / "record"
    # Every other point from the whole run (seeds 0 and 1 at once), as an earlier machine would have left it.
    monkeypatch.chdir(project)
    params = load_params(project / "params.yaml").model_copy(update={"train_domains": ["backend"]})
    for point in plan(params):
        if point != LEFT:
            write_point(record, "backend", point, "the whole run", "fp32")

    done = run(["sweetflow", "experiment", str(experiment), "--points", str(record)], project).stdout
    assert "1 points to run: rft seed 1" in done and "Running stage 'policy@backend-rft'" in done

    whole = repro_project / "data/backend/evaluations/rft/trajectories-seed1.parquet"
    alone = pl.read_parquet(record / "outcomes/rft/trajectories-seed1.parquet")
    assert alone.equals(pl.read_parquet(whole, columns=list(OUTCOME_COLUMNS)))
    point = json.loads(point_file(record, LEFT).read_text())
    whole_metrics = json.loads((repro_project / "reports/backend/rft/metrics.json").read_text())
    assert point["test"] == whole_metrics["seeds"]["1"]
    assert point["experiment"] == "backend-only-rft-seed1"
    assert point["code"]["git_commit"] == run(["git", "rev-parse", "HEAD"], project).stdout.strip()
    table = json.loads((record / "points.json").read_text())
    assert table["methods"]["rft"]["seeds"] == [0, 1]
    assert {(c["a"], c["b"]) for c in table["comparisons"]} >= {("sweet", "rft"), ("sweet", "mtdpo")}

    again = run(["sweetflow", "experiment", str(experiment), "--points", str(record)], project).stdout
    assert "0 points to run" in again and "Running stage" not in again
