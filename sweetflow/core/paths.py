"""Where every artifact of the pipeline lives, by domain: the one place dvc.yaml's paths are spelled
out for the code (the two must agree; tests/integration/test_pipeline.py runs the DAG and checks them).

    data/<domain>/...            data artifacts (Parquet + manifest.json), DVC-cached
    models/<domain>/...          checkpoints, DVC-cached
    reports/<domain>/<method>/   evaluation metrics of each method (`dvc metrics show`)
    reports/<domain>/stages/...  the other stages' metrics and training curves
    reports/runs/<stage>.json    each stage's run record: when, how long, which commit and machine
"""

from __future__ import annotations


def tasks(domain: str) -> str:
    return f"data/{domain}/tasks"


def task_table(domain: str, split: str) -> str:
    return f"{tasks(domain)}/{split}.parquet"


def episodes(domain: str, stage: str) -> str:
    """Trajectories of the training tasks: stage `demos` or `rollout`."""
    return f"data/{domain}/{stage}"


def trajectories(domain: str, stage: str) -> str:
    return f"{episodes(domain, stage)}/trajectories.parquet"


def trajectory_pairs(domain: str) -> str:
    return f"data/{domain}/trajectory_pairs"


def candidates(domain: str) -> str:
    return f"data/{domain}/candidates"


def ranked(domain: str, critic: str) -> str:
    return f"data/{domain}/ranked/{critic}"


def step_pairs(domain: str, critic: str) -> str:
    return f"data/{domain}/step_pairs/{critic}"


def candidate_labels(domain: str) -> str:
    return f"data/{domain}/candidate_labels"


def evaluations(domain: str) -> str:
    return f"data/{domain}/evaluations"


def validation_metrics(domain: str, method: str) -> str:
    return f"{stage_report(domain, 'validation', method)}/metrics.json"


def base_model(domain: str) -> str:
    return f"models/{domain}/base"


def critic(domain: str, name: str) -> str:
    return f"models/{domain}/critics/{name}"


def policy(domain: str, name: str) -> str:
    return f"models/{domain}/policies/{name}"


def stage_report(domain: str, *parts: str) -> str:
    """A stage's report directory, e.g. stage_report("backend", "critics", "with_info")."""
    return "/".join(("reports", domain, "stages", *parts))


def run_record(stage: str) -> str:
    """The run record of a stage, by DVC's name of it (`critic@backend-with_info`)."""
    return f"reports/runs/{stage}.json"
