"""The README's claims that can drift from the files they describe: its length, the stages, each method's
NLL term, its results table and the documents it links; and the benchmark list it points to
(docs/performance.md)."""

from __future__ import annotations

import json
import re
import statistics

from sweetflow.dag import load_stages
from sweetflow.params import load_params
from tests.support.project import ROOT

README = (ROOT / "README.md").read_text()


def test_the_readme_is_short():
    assert len(README.split()) <= 1500


def test_the_pipeline_table_names_every_stage():
    kinds = {s.name.split("@")[0] for s in load_stages(ROOT)}
    table = README.split("## The pipeline", 1)[1].split("\n\n", 2)[2]
    assert {kind for kind in kinds if f"`{kind}" not in table} == set()


def test_the_benchmark_list_names_every_script():
    block = (ROOT / "docs/performance.md").read_text().split("## The benchmarks", 1)[1].split("\n## ", 1)[0]
    scripts = {p.name for p in (ROOT / "bench").glob("*.py")}
    assert scripts == set(re.findall(r"bench/(\w+\.py)", block))


def test_each_methods_nll_term_is_the_one_params_yaml_gives_it():
    stated = re.search(r"configuration: (.+?) \(`rft` has no preference term\)", README.replace("\n", " ")).group(1)
    coefficients = dict(re.findall(r"`(\w+)` ([\d.]+)", stated))
    policies = load_params(ROOT / "params.yaml").policies
    assert {name for name, p in policies.items() if p.method != "rft"} == set(coefficients)
    assert {name: float(c) for name, c in coefficients.items()} == {
        name: policies[name].nll_coef for name in coefficients
    }


def test_every_linked_document_exists():
    links = re.findall(r"\]\(((?:docs|reports)/[^)#]+)", README)
    assert links and [link for link in links if not (ROOT / link).exists()] == []


def table_cells(heading: str) -> dict[str, list[str]]:
    """The README's results table whose header row starts with `heading`: the method's key (its backticked
    name, `zero_shot` for the base's row, `expert` for the scripted upper bound) → its cells after the first."""
    block = README.split(f"| {heading} |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in block.splitlines()[2:]:
        first, *cells = [c.strip() for c in line.strip("|").split("|")]
        named = re.search(r"`(\w+)`", first)
        key = named.group(1) if named else ("zero_shot" if "zero-shot" in first else "expert")
        if "without training-time information" in first:
            key = "sweet_no_info"
        rows[key] = cells
    return rows


def stated(value: float, spread: float | None) -> str:
    return f"{value * 100:.1f}" + ("" if spread is None else f" ± {spread * 100:.1f}")


def spread(metrics: dict, column: str) -> float | None:
    """The sample standard deviation over seeds the stage recorded, else computed from its seeds' values."""
    if f"{column}_std" in metrics or "seeds" not in metrics:
        return metrics.get(f"{column}_std")
    return statistics.stdev(seed[column] for seed in metrics["seeds"].values())


def test_the_results_table_is_the_records_metrics():
    """Each mean ± std of the README's table is what the committed metrics files say."""
    rows = table_cells("backend method")
    assert len(rows) >= 5
    for method, cells in rows.items():
        metrics = json.loads((ROOT / f"reports/backend/{method}/metrics.json").read_text())
        expected = [stated(metrics[c], spread(metrics, c)) for c in ("tests_passed", "success_rate")]
        assert cells[:2] == expected, method
