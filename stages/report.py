"""Stage `report`: the paper's Table 2 from our evaluations, for each domain, the goal check and the plots.

Reads params `seeds` and `train_domains`, under `reports/<domain>/` every method's `metrics.json`,
the critics' and their checks' metrics and the DVCLive training curves, and under
`data/<domain>/` every method's test episodes (for the paired intervals and the site) and, for
trained domains, the candidates, their rankings, step pairs and critic checks, each only where
present (a method not evaluated yet is "not run"). Writes `reports/summary/` (`results.md`,
`results.json`, `methods.png`, `training_curves.png`, `methods-<domain>.csv`, `manifest.json`), a copy of `results.md`
at `reports/results.md`, and the run's static site, `reports/site/` (open `index.html`; frontend
pages are rendered with params `frontend.scoring`).
"""

from __future__ import annotations

import os
from pathlib import Path

from sweetflow.core.artifacts import temporary_path, write_json
from sweetflow.core.errors import run_stage
from sweetflow.core.params import DOMAINS
from sweetflow.core.tables import task_file
from sweetflow.report.markdown import render_markdown, results_data
from sweetflow.report.plots import plot_curves, plot_methods, write_method_table
from sweetflow.report.read import find_curves, read_domain
from sweetflow.report.site import write_run_site
from sweetflow.stage import begin


def main() -> None:
    stage = begin("report", __doc__, domain=False)
    params = stage.params
    # Every method's test episodes lie beside the references' scores, each in its own directory.
    evaluations = {d: Path(stage.upstream("score_references", domain=d)).parent for d in DOMAINS}
    tests = {d: Path(stage.upstream("tasks", domain=d, file=task_file("test"))) for d in DOMAINS}
    results = [read_domain(evaluations[d], d, d in params.train_domains, tests[d]) for d in DOMAINS]
    panels = [p for d in DOMAINS for p in find_curves(d, f"{d}: ")]
    summary, results_md, _, site_dir = map(Path, stage.definition.outs)
    # The data directories it reads; the checkpoint of the clip metric is a dep, not data.
    inputs = [
        Path(dep) for dep in stage.definition.deps if dep.startswith(("reports/", "data/")) and Path(dep).exists()
    ]
    with stage.output(inputs, out=summary) as out:
        (out.dir / "results.md").write_text(render_markdown(results, params.seeds, plots="."))
        write_json(out.dir / "results.json", results_data(results, params.seeds))
        plot_methods(results, out.dir / "methods.png")
        plot_curves(panels, out.dir / "training_curves.png")
        for r in results:
            write_method_table(r, out.dir / f"methods-{r.domain}.csv")
        # The summary's run record is written last (its `with` closes after this one's).
        with stage.output(inputs, out=site_dir) as site:
            plots = [
                (out.dir / "methods.png", "The headline metrics per method (mean ± std over seeds)"),
                (out.dir / "training_curves.png", "Training loss per run; a line per seed for the policies"),
            ]
            write_run_site(site.dir, results, plots, params, evaluations)
    # The same text at the top of reports/; its image links point into summary/.
    markdown = render_markdown(results, params.seeds, plots=summary.name)
    tmp = temporary_path(results_md)
    try:
        tmp.write_text(markdown)
        os.replace(tmp, results_md)
    finally:
        tmp.unlink(missing_ok=True)
    print(markdown)


if __name__ == "__main__":
    run_stage(main)
