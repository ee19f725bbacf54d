"""The reproduced small project (`repro_project`, both domains through the trained chain under `dvc repro`):
its outputs, lineage, the exported trajectories and the run's site. The DAG's other integration tests are
test_engines.py (DVC beside Snakemake), test_pipeline_changes.py (edits, reruns and sharing of copies),
test_run_cache.py and test_portable_kernels.py: `make test` distributes tests by file, and the
project is built once per run for all of them (tests.support.reproduced)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from sweetflow.cli import main
from sweetflow.core.artifacts import content_hash, read_manifest, read_run_record
from sweetflow.core.tables import read_tasks
from sweetflow.dag import load_stages
from sweetflow.models.checkpoint import load_checkpoint, pad_id
from sweetflow.rl.logprobs import reference_segment_logps
from sweetflow.rl.ranking import REFERENCE_DIR, critic_reference
from sweetflow.rl.sequences import candidate_sequences
from tests.support.browser import chromium_page
from tests.support.project import SMALL_PARAMS, run
from tests.support.reproduced import DATA_OUTS, METRICS

HEADLINE = {"backend": ("tests_passed", "success_rate"), "frontend": ("similarity", "win_rate")}


def test_dvc_repro_generates_tasks_and_references_pass(repro_project: Path):
    metrics = json.loads((repro_project / "reports/backend/reference/metrics.json").read_text())
    assert metrics["count"] == SMALL_PARAMS["backend"]["tasks"]["n_test"]
    assert metrics["tests_passed"] == 1.0 and metrics["success_rate"] == 1.0
    test = pl.read_parquet(repro_project / "data/backend/tasks/test.parquet")
    assert test["flags"].list.len().sum() == 0
    assert (test["reference_passes"] == 10).all()
    # Frontend: every target rendered the same twice, and scores 1 against its own screenshot.
    frontend = json.loads((repro_project / "reports/frontend/reference/metrics.json").read_text())
    assert frontend["count"] == SMALL_PARAMS["frontend"]["tasks"]["n_test"]
    assert frontend["similarity"] == pytest.approx(1.0) and frontend["statuses"] == {"rendered": frontend["count"]}
    targets = pl.read_parquet(repro_project / "data/frontend/tasks/test.parquet")
    assert targets["flags"].list.len().sum() == 0 and targets["target_png"].is_not_null().all()
    for out in DATA_OUTS:
        manifest = read_manifest(repro_project / out)
        assert manifest["output_hash"] == content_hash(repro_project / out)
        record = read_run_record(manifest["stage"], repro_project)
        assert record["code"]["git_commit"] and record["packages"]["polars"] and record["machine"]["cpu"]
    shown = run(["dvc", "metrics", "show", "--json"], repro_project).stdout
    assert all(path in shown for path in METRICS)


def test_sweet_rl_chain_trains_every_method_per_seed_in_both_domains_and_writes_the_table(repro_project: Path):
    seeds = SMALL_PARAMS["seeds"]
    for domain in ("backend", "frontend"):
        stages = repro_project / "reports" / domain / "stages"
        critic = json.loads((stages / "critics/with_info/metrics.json").read_text())
        assert critic["train_pairs"] > 0 and critic["training_info"] is True
        assert json.loads((stages / "critics/no_info/metrics.json").read_text())["training_info"] is False
        pairs = pl.read_parquet(repro_project / f"data/{domain}/step_pairs/with_info/pairs.parquet")
        assert pairs.height > 0 and (pairs["chosen_score"] > pairs["rejected_score"]).all()
        for method in ("rft", "mtdpo", "sweet", "sweet_no_info"):
            checkpoints = sorted(p.name for p in (repro_project / f"models/{domain}/policies/{method}").glob("seed*"))
            assert checkpoints == [f"seed{k}" for k in seeds]
            metrics = json.loads((repro_project / f"reports/{domain}/{method}/metrics.json").read_text())
            assert sorted(metrics["seeds"]) == [str(k) for k in seeds]
            first, second = HEADLINE[domain]
            assert metrics[second] == sum(m[second] for m in metrics["seeds"].values()) / len(seeds)
            assert 0 <= metrics[first] <= 1 and metrics[f"{first}_std"] >= 0
    # The frontend's scripted designer beats the page made from the description alone.
    expert = json.loads((repro_project / "reports/frontend/expert/metrics.json").read_text())
    no_ask = json.loads((repro_project / "reports/frontend/no_ask/metrics.json").read_text())
    assert expert["similarity"] > no_ask["similarity"] and no_ask["win_rate"] == 0.5
    results = (repro_project / "reports/results.md").read_text()
    assert "| SWEET-RL | `sweet` |" in results and "### Goal check (backend)" in results
    assert "## Frontend design (`frontend`)" in results and "| similarity (%) | win rate (%) |" in results
    assert (repro_project / "reports/summary/methods.png").read_bytes().startswith(b"\x89PNG")
    plots = run(["dvc", "plots", "show", "--json"], repro_project).stdout
    assert (
        "reports/backend/stages/policies/sweet/plots" in plots
        and "reports/frontend/stages/critics/with_info/plots" in plots
    )
    assert "backend sweet, training loss, seeds overlaid" in plots
    lineage = run(["sweetflow", "lineage", "reports/backend/sweet/metrics.json"], repro_project).stdout
    for ancestor in (
        "policy@backend-sweet",
        "step_pairs@backend-with_info",
        "rank@backend-with_info",
        "critic@backend-with_info",
        "candidates@backend",
        "tasks@backend",
    ):
        assert ancestor in lineage, ancestor


def test_rank_scores_each_candidate_against_the_critics_own_reference(repro_project: Path, monkeypatch):
    """The critics of the small project warm up, so their loss compared them with the warmed model: the
    ranking must subtract that model, kept beside each critic, and not the base model."""
    monkeypatch.chdir(repro_project)  # the task tables are read by their paths in the project
    domain = "backend"
    tasks = {t["task_id"]: t for t in read_tasks(domain, "train")}
    rollout = pl.read_parquet(f"data/{domain}/rollout/trajectories.parquet")
    candidates = pl.read_parquet(f"data/{domain}/candidates/candidates.parquet").head(12)
    for name, info in (("with_info", True), ("no_info", False)):
        critic_dir = Path(f"models/{domain}/critics/{name}")
        assert critic_reference(critic_dir, f"models/{domain}/base") == critic_dir / REFERENCE_DIR
        reference, tokenizer = load_checkpoint(critic_dir / REFERENCE_DIR)
        base, _ = load_checkpoint(f"models/{domain}/base")
        sequences = candidate_sequences(tokenizer, tasks, rollout, candidates, info, 10**6)
        ranked = candidates.select("state_id", "candidate").join(
            pl.read_parquet(f"data/{domain}/ranked/{name}/candidates.parquet"), on=["state_id", "candidate"]
        )
        assert ranked.height == candidates.height
        for model, expected_equal in ((reference, True), (base, False)):
            ref = reference_segment_logps(model, sequences, 4, pad_id(tokenizer))
            means = (ref.sums[:, 0] / ref.counts[:, 0]).tolist()
            same = ranked["baseline_logp_mean"].to_list() == pytest.approx(means, abs=1e-5)
            assert same is expected_equal, (name, expected_equal)
        on_cpu = {"device": "cpu", "dtype": "float32"}  # params device auto, on a machine without a GPU
        assert read_manifest(Path(f"data/{domain}/ranked/{name}"))["devices"] == {"critic": on_cpu, "reference": on_cpu}
        assert read_manifest(critic_dir)["devices"] == {"critic": on_cpu}
        critic = json.loads((repro_project / f"reports/{domain}/stages/critics/{name}/metrics.json").read_text())
        # Its drift as a language model is measured on held-out pairs, which this small project has none of.
        assert critic["holdout_pairs"] == 0 and "heldout_kl_to_reference" not in critic


def test_lineage_walks_to_the_roots_and_verifies(repro_project: Path):
    result = run(["sweetflow", "lineage", "reports/backend/reference/metrics.json"], repro_project)
    assert "score_references@backend" in result.stdout and "data/backend/tasks" in result.stdout
    assert "every recorded hash matches" in result.stdout


def test_rollouts_round_trip_through_the_official_shape(repro_project, tmp_path):
    rollouts = repro_project / "data/backend/rollout/trajectories.parquet"
    out = tmp_path / "official.jsonl"
    assert (
        main(
            [
                "export-trajectories",
                str(rollouts),
                "--tasks",
                str(repro_project / "data/backend/tasks/train.parquet"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    first = json.loads(out.read_text().splitlines()[0])
    assert set(first) == {"task", "dialogue_history", "answer", "reward"}
    assert first["dialogue_history"][0]["role"] == "assistant" and "input" in first["dialogue_history"][0]
    assert set(first["task"]) == {"problem_description", "ground_truth", "hidden_information", "test_cases"}

    assert main(["import-trajectories", str(out), "--out", str(tmp_path / "back")]) == 0
    back = pl.read_parquet(tmp_path / "back/trajectories.parquet")
    ours = pl.read_parquet(rollouts)
    assert back["answer"].to_list() == ours["answer"].to_list()
    assert back["reward"].to_list() == ours["reward"].to_list()
    assert back["answered"].to_list() == ours["answered"].to_list()
    assert back["sample"].to_list() == ours["sample"].to_list()
    kept = ["role", "content", "prompt", "raw"]
    assert [[{k: t[k] for k in kept} for t in d] for d in back["dialogue"]] == [
        [{k: t[k] for k in kept} for t in d] for d in ours["dialogue"]
    ]
    tasks = pl.read_parquet(tmp_path / "back/tasks.parquet")
    assert tasks.height == ours["task_id"].n_unique()


def test_every_stage_records_exactly_the_params_it_declares(repro_project: Path):
    for spec in load_stages(repro_project):
        for out in spec.outs:
            if (repro_project / out / "manifest.json").is_file():
                recorded = set(read_manifest(repro_project / out)["params"])
                assert recorded == set(json.loads(spec.params)), spec.name


def test_the_run_site_opens_from_disk_with_working_filters_pictures_and_links(repro_project: Path):
    site = repro_project / "reports/site"
    pages = sorted(p.name for p in site.glob("*.html"))
    assert pages == [
        "dialogues-backend.html",
        "dialogues-frontend.html",
        "index.html",
        "sweet-backend.html",
        "sweet-frontend.html",
    ]
    with chromium_page() as (page, problems):
        for name in pages:
            page.goto((site / name).as_uri())
            hrefs = page.eval_on_selector_all("a[href]", "as => as.map(a => a.getAttribute('href'))")
            assert {"index.html", "dialogues-backend.html", "sweet-frontend.html"} <= set(hrefs), name
            assert all((site / h).is_file() for h in hrefs), (name, hrefs)
        page.goto((site / "index.html").as_uri())
        assert "SWEET-RL − Multi-turn DPO" in page.inner_text("#results-backend")
        widths = page.eval_on_selector_all("img", "is => is.map(i => i.naturalWidth)")
        assert len(widths) == 2 and all(w > 0 for w in widths)  # methods.png, training_curves.png

        # Backend dialogues: each filter narrows the list to what it names; a dialogue shows its tests.
        page.goto((site / "dialogues-backend.html").as_uri())
        every = page.locator("details.dialogue").count()
        page.select_option("select[name=method]", "expert")
        methods = page.eval_on_selector_all("details.dialogue", "ds => ds.map(d => d.dataset.method)")
        assert methods and set(methods) == {"expert"} and len(methods) < every
        expert = pl.read_parquet(repro_project / "data/backend/evaluations/expert/trajectories.parquet")
        assert len(methods) == expert.height
        page.select_option("select[name=outcome]", "all tests passed")
        solved = page.eval_on_selector_all("details.dialogue", "ds => ds.map(d => d.dataset.outcome)")
        assert len(solved) == expert["success"].sum() > 0 and set(solved) == {"all tests passed"}
        told = 0
        for dialogue in page.locator("details.dialogue").all():
            dialogue.locator("summary").click()
            dialogue.locator("table.tests").wait_for()  # filled in when the dialogue opens
            told += dialogue.locator("li.told").count()  # a task of a family without facts has none
            results = dialogue.locator("table.tests td:last-child").all_inner_texts()
            assert results and set(results) == {"pass"}  # each test's actual value equals the expected one
        assert told > 0  # it asked, and was told
        page.select_option("select[name=outcome]", "")
        family = page.eval_on_selector("select[name=family] option:nth-child(2)", "o => o.value")
        page.select_option("select[name=family]", family)
        assert set(page.eval_on_selector_all("details.dialogue", "ds => ds.map(d => d.dataset.family)")) == {family}

        # Frontend dialogues: the target beside the final page, and each turn's page, all drawn.
        page.goto((site / "dialogues-frontend.html").as_uri())
        page.select_option("select[name=method]", "expert")
        first = page.locator("details.dialogue").first
        first.locator("summary").click()
        first.locator("img").last.scroll_into_view_if_needed()
        page.wait_for_function("() => [...document.images].every(i => i.complete)")
        widths = first.locator("img").evaluate_all("is => is.map(i => i.naturalWidth)")
        assert len(widths) >= 3 and all(w > 0 for w in widths)  # target, final page, a turn's page
        assert "similarity" in first.locator(".pages-row").inner_text()

        # SWEET-RL states: every candidate with each critic's score; the filter keeps checked states.
        page.goto((site / "sweet-backend.html").as_uri())
        n = SMALL_PARAMS["candidates"]["n"]
        state = page.locator("details.state").first
        assert state.locator("table.candidates tr").count() == n + 1
        assert state.locator("th").all_inner_texts()[3:5] == ["score: no_info", "score: with_info"]
        page.check("input[name=checked]")
        checked = page.locator("details.state")
        assert 0 < checked.count() <= SMALL_PARAMS["critic_check"]["states"] * 2
        assert all(c.locator("ul.played-out li").count() > 0 for c in checked.all())
    assert problems == []


def test_view_builds_a_site_of_any_trajectories_file(repro_project: Path, tmp_path: Path):
    out = tmp_path / "site"
    assert (
        main(
            [
                "view",
                str(repro_project / "data/backend/rollout/trajectories.parquet"),
                "--domain",
                "backend",
                "--tasks",
                str(repro_project / "data/backend/tasks/train.parquet"),
                "--out",
                str(out),
                "--params",
                str(repro_project / "params.yaml"),
            ]
        )
        == 0
    )
    rollout = pl.read_parquet(repro_project / "data/backend/rollout/trajectories.parquet")
    with chromium_page() as (page, problems):
        page.goto((out / "dialogues-backend.html").as_uri())
        assert page.inner_text("#count").startswith(f"{rollout.height} of {rollout.height} dialogues")
        assert page.eval_on_selector_all("details.dialogue", "ds => [...new Set(ds.map(d => d.dataset.method))]") == [
            "rollout"
        ]
    assert problems == []
