"""Stage `report`: the paper's Table 2 from our evaluations, the goal check and the plots.

Reads params `seeds`, `reports/backend/<method>/metrics.json`, `reports/critics/<name>/metrics.json`,
`reports/critic_check/<name>/metrics.json`
and the DVCLive training curves under `reports/base_model`, `reports/critics` and
`reports/policies`, each only where present (a method not evaluated yet is "not run"). Writes
`reports/summary/` (`results.md`, `results.json`, `methods.png`, `training_curves.png`,
`manifest.json`) and a copy of `results.md` at `reports/results.md`.
"""

from __future__ import annotations

import os
from pathlib import Path

from sweetflow.artifacts import stage_output, write_json
from sweetflow.errors import run_stage
from sweetflow.params import load_params
from sweetflow.report import (
    REFERENCE,
    find_curves,
    goal_check,
    plot_curves,
    plot_methods,
    read_critics,
    read_methods,
    render_markdown,
    results_data,
    table_rows,
)

REPORTS = Path("reports")
INPUTS = [REPORTS / sub for sub in ("backend", "base_model", "critics", "critic_check", "policies")]
SUMMARY = REPORTS / "summary"
RESULTS_MD = REPORTS / "results.md"


def main() -> None:
    seeds = load_params().seeds
    methods = read_methods(REPORTS / "backend")
    rows = table_rows(methods)
    check = goal_check(rows)
    critics = read_critics(REPORTS)
    reference = methods.get(REFERENCE)
    with stage_output(SUMMARY, "report", {}, [p for p in INPUTS if p.exists()]) as out:
        (out.dir / "results.md").write_text(render_markdown(rows, check, seeds, reference, critics, plots="."))
        write_json(out.dir / "results.json", results_data(rows, check, seeds, reference, critics))
        plot_methods(rows, out.dir / "methods.png")
        plot_curves(find_curves(REPORTS), out.dir / "training_curves.png")
    # The same text at the path the issue asks for; its image links point into summary/.
    markdown = render_markdown(rows, check, seeds, reference, critics, plots=SUMMARY.name)
    tmp = RESULTS_MD.with_name(f".{RESULTS_MD.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(markdown)
        os.replace(tmp, RESULTS_MD)
    finally:
        tmp.unlink(missing_ok=True)
    print(markdown)


if __name__ == "__main__":
    run_stage(main)
