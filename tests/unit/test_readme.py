"""The README's claims that can drift from the files they describe: its length, the stages, the
benchmarks, each method's NLL term, and the documents it links."""

from __future__ import annotations

import re

from sweetflow.core.params import load_params
from sweetflow.dag import load_stages
from tests.support.project import ROOT

README = (ROOT / "README.md").read_text()


def test_the_readme_is_short():
    assert len(README.split()) <= 2500


def test_the_pipeline_table_names_every_stage():
    kinds = {s.name.split("@")[0] for s in load_stages(ROOT)}
    table = README.split("## The pipeline", 1)[1].split("\n\n", 2)[2]
    assert {kind for kind in kinds if f"`{kind}" not in table} == set()


def test_the_benchmark_list_names_every_script():
    block = README.split("### Benchmarks", 1)[1].split("###", 1)[0]
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
