"""The DAG end to end with the real engines: DVC and Snakemake, lineage, sharing through a remote."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import polars as pl
import pytest
import torch
import yaml

from sweetflow.cli import main
from sweetflow.core.artifacts import content_hash, read_manifest, read_run_record
from sweetflow.dag import StageSpec, load_stages, rule_name
from tests.support.browser import chromium_page
from tests.support.project import ROOT, SMALL_PARAMS, make_project, run

# `make test` distributes tests by file (`--dist loadfile`): every test that reads the reproduced
# project (`repro_project`, built once per worker) is in this file, so the DAG is reproduced once.

DATA_OUTS = tuple(
    f"data/{domain}/{out}"
    for domain in ("backend", "frontend")
    for out in (
        "tasks",
        "evaluations/reference",
        "demos",
        "rollout",
        "trajectory_pairs",
        "evaluations/expert",
        "evaluations/no_ask",
        "evaluations/zero_shot",
        "candidates",
        "ranked/with_info",
        "step_pairs/with_info",
        "critic_check/with_info",
        "evaluations/sweet",
    )
)
# Checkpoints' weights and tokenizers (their training_config.json hold wall times).
CHECKPOINT_FILES = tuple(
    f"models/{domain}/{path}"
    for domain in ("backend", "frontend")
    for path in (
        "base/model.safetensors",
        "base/tokenizer.json",
        "critics/with_info/model.safetensors",
        "critics/no_info/model.safetensors",
        "policies/rft/seed1/model.safetensors",
        "policies/mtdpo/seed0/model.safetensors",
        "policies/sweet/seed1/model.safetensors",
    )
)
METRICS = tuple(
    f"reports/{domain}/{path}/metrics.json"
    for domain in ("backend", "frontend")
    for path in (
        "stages/tasks",
        "reference",
        "stages/demos",
        "stages/rollout",
        "stages/trajectory_pairs",
        "expert",
        "no_ask",
        "zero_shot",
        "stages/candidates",
        "stages/ranked/with_info",
        "stages/step_pairs/with_info",
        "stages/critic_check/with_info",
        "rft",
        "mtdpo",
        "sweet",
        "sweet_no_info",
    )
)
HEADLINE = {"backend": ("tests_passed", "success_rate"), "frontend": ("similarity", "win_rate")}


def test_both_engines_name_the_same_stages():
    dvc = run(["dvc", "stage", "list", "--name-only"], ROOT).stdout.split()
    snake = run(["snakemake", "--list-rules"], ROOT).stdout.split()
    assert sorted(rule_name(s) for s in dvc) == sorted(r for r in snake if r != "all")
    assert {s.name for s in load_stages(ROOT)} == set(dvc)


def test_snakemake_lint_is_clean():
    result = run(["snakemake", "--lint"], ROOT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_rule_asks_for_what_its_stage_declares():
    """The Snakefile makes a stage's meta.resources its rule's threads and resources (dry run)."""
    stages = {s.rule_name: s.resources for s in load_stages(ROOT)}
    plan = run(["snakemake", "-n", "--forceall", "--cores", "8", "policy_backend_sweet"], ROOT).stdout
    jobs = re.findall(r"rule (\w+):.*?threads: (\d+)\n\s+resources: ([^\n]+)", plan, re.DOTALL)
    assert {"tasks_backend", "critic_backend_with_info", "policy_backend_sweet"} <= {rule for rule, _, _ in jobs}
    for rule, threads, resources in jobs:
        declared = dict(item.split("=", 1) for item in resources.split(", "))
        assert int(threads) == stages[rule].cpus, rule
        assert {k: int(declared[k]) for k in stages[rule].snakemake()} == stages[rule].snakemake(), rule
        assert ("gpu" in declared) == (stages[rule].gpus > 0), rule


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
    assert (
        "backend methods side by side (success, %)" in plots and "backend sweet, training loss, seeds overlaid" in plots
    )
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


def upstream(stages: list[StageSpec], target: str) -> list[StageSpec]:
    """`target` and every stage whose outputs it reads, directly or through others."""
    by_name = {s.name: s for s in stages}
    found: dict[str, StageSpec] = {}
    todo = [target]
    while todo:
        stage = by_name[todo.pop()]
        if stage.name in found:
            continue
        found[stage.name] = stage
        todo += [
            other.name
            for other in stages
            for out in other.outs
            for dep in stage.deps
            if Path(out).is_relative_to(dep) or Path(dep).is_relative_to(out)
        ]
    return list(found.values())


def test_dvc_and_snakemake_produce_identical_artifacts_and_snakemakes_are_shared_through_dvc(
    repro_project: Path, tmp_path: Path
):
    """Snakemake runs the backend's SWEET-RL chains (both critics), through the policies'
    evaluations, in a fresh copy: every artifact it writes equals DVC's. (A part of the DAG,
    training included, keeps this test to minutes; that both engines know every stage is checked
    above.) Its outputs are then shared the documented way: `dvc commit` records them in dvc.lock,
    `dvc push` sends them to a remote, and a teammate's clone pulls them with nothing left to run."""
    targets = ["evaluate_policy@backend-sweet", "evaluate_policy@backend-sweet_no_info"]
    snake_project = make_project(tmp_path / "snake", SMALL_PARAMS)
    # One thread a rule, as SMALL_PARAMS trains (the declared cores are the paper's): two run at once.
    run(
        [
            "snakemake",
            "--profile",
            "workflow/profiles/default",
            "--cores",
            "2",
            "--max-threads",
            "1",
            *map(rule_name, targets),
        ],
        snake_project,
    )
    stages = load_stages(snake_project)
    outs = [Path(out) for target in targets for stage in upstream(stages, target) for out in stage.outs]
    assert {"models/backend/base", "data/backend/step_pairs/with_info", "data/backend/evaluations/sweet"} <= {
        out.as_posix() for out in outs
    }
    compared = [p for p in DATA_OUTS + METRICS + CHECKPOINT_FILES if any(Path(p).is_relative_to(out) for out in outs)]
    assert len(compared) >= 15
    for path in compared:
        assert content_hash(snake_project / path) == content_hash(repro_project / path), path
    assert not (snake_project / "data/frontend/tasks").exists()  # only the targets' part of the DAG ran

    run(["dvc", "commit", "--force", "--with-deps", *targets], snake_project)
    assert json.loads(run(["dvc", "status", "--json", "--with-deps", *targets], snake_project).stdout) == {}
    run(["dvc", "remote", "add", "-d", "shared", str(tmp_path / "remote")], snake_project)
    run(["git", "add", "-A"], snake_project)
    run(["git", "commit", "-qm", "snakemake's outputs, committed to DVC"], snake_project)
    run(["dvc", "push", "-q", "--with-deps", *targets], snake_project)
    clone = tmp_path / "teammate"
    run(["git", "clone", "-q", str(snake_project), str(clone)], tmp_path)
    run(["dvc", "pull", "-q", "--with-deps", *targets], clone)
    assert json.loads(run(["dvc", "status", "--json", "--with-deps", *targets], clone).stdout) == {}
    for path in compared:
        assert content_hash(clone / path) == content_hash(snake_project / path), path


def test_lineage_walks_to_the_roots_and_verifies(repro_project: Path):
    result = run(["sweetflow", "lineage", "reports/backend/reference/metrics.json"], repro_project)
    assert "score_references@backend" in result.stdout and "data/backend/tasks" in result.stdout
    assert "every recorded hash matches" in result.stdout


def test_lineage_names_a_hand_edited_artifact(repro_project: Path, tmp_path: Path):
    project = tmp_path / "edited"
    shutil.copytree(repro_project, project, symlinks=True)
    tasks = project / "data/backend/tasks/test.parquet"
    df = pl.read_parquet(tasks)
    tasks.unlink()  # DVC may have linked it to its cache; write a new file, don't edit the cache
    df.with_columns(pl.lit("edited").alias("problem_description")).write_parquet(tasks)
    result = run(["sweetflow", "lineage", "reports/backend/reference/metrics.json"], project, check=False)
    assert result.returncode == 1
    text = re.sub(r"\s+", " ", result.stdout)
    assert "data/backend/tasks: content differs" in text
    assert "input data/backend/tasks/test.parquet changed" in text
    assert "dvc.lock: stage 'tasks@backend' is not up to date" in text


def test_lineage_names_params_changed_since_the_run(repro_project: Path, tmp_path: Path):
    project = tmp_path / "stale"
    shutil.copytree(repro_project, project, symlinks=True)
    params = project / "params.yaml"
    params.write_text(params.read_text().replace("seed: 3", "seed: 4"))
    result = run(["sweetflow", "lineage", "data/backend/tasks", "--no-dvc"], project, check=False)
    assert result.returncode == 1
    assert "section 'backend.tasks' changed" in re.sub(r"\s+", " ", result.stdout)


def test_team_shares_artifacts_through_a_remote(repro_project: Path, tmp_path: Path):
    origin = tmp_path / "origin"
    shutil.copytree(repro_project, origin, symlinks=True)
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "-d", "shared", str(remote)], origin)
    run(["git", "commit", "-qam", "add remote"], origin)
    run(["dvc", "push", "-q"], origin)

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    run(["dvc", "pull", "-q"], clone)
    for out in DATA_OUTS + METRICS + CHECKPOINT_FILES:
        assert content_hash(clone / out) == content_hash(origin / out)
    assert json.loads(run(["dvc", "status", "--json"], clone).stdout) == {}
    assert "up to date" in run(["dvc", "repro"], clone).stdout.lower()


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


# --- sharing and auditing hold for a user whose Python writes bytecode (tool_env: it is on) ---------


def status(project: Path) -> dict:
    return json.loads(run(["dvc", "status", "--json"], project).stdout)


def copy_of(project: Path, dest: Path) -> Path:
    shutil.copytree(project, dest, symlinks=True)
    return dest


def test_importing_every_module_changes_no_stage(repro_project: Path, tmp_path: Path):
    """Python writes __pycache__ into every package a stage depends on; .dvcignore keeps it out of
    the dependencies' hashes."""
    project = copy_of(repro_project, tmp_path / "imported")
    modules = sorted(
        ".".join(p.with_suffix("").relative_to(project).parts).removesuffix(".__init__")
        for top in ("sweetflow", "stages")
        for p in (project / top).rglob("*.py")
    )
    run(["python", "-c", f"import importlib; [importlib.import_module(m) for m in {modules!r}]"], project)
    assert list((project / "sweetflow/rl").glob("__pycache__/*.pyc")), "bytecode should have been written"
    assert status(project) == {}


def test_a_forced_identical_rerun_leaves_every_later_stage_up_to_date(repro_project: Path, tmp_path: Path):
    """Outputs are the same bytes for the same inputs (volatile facts go to the run record): DVC's
    early cut-off then keeps everything after the rerun stage up to date."""
    project = copy_of(repro_project, tmp_path / "forced")
    before = (project / "data/backend/tasks/manifest.json").read_bytes()
    run(["dvc", "repro", "--force", "--single-item", "tasks@backend"], project)
    assert (project / "data/backend/tasks/manifest.json").read_bytes() == before
    assert status(project) == {}


def test_a_changed_value_reruns_exactly_the_stages_that_read_it(repro_project: Path, tmp_path: Path):
    """A value that lived as a model default before params.yaml held every value."""
    project = copy_of(repro_project, tmp_path / "changed")
    params = (project / "params.yaml").read_text()
    (project / "params.yaml").write_text(params.replace("memory_mb: 1024", "memory_mb: 1000", 1))
    readers = {s.name for s in load_stages(project) if "backend.scoring" in json.loads(s.params)}
    assert {"tasks@backend", "evaluate@backend-expert", "rollout@backend", "critic_check@backend-with_info"} <= readers
    assert set(status(project)) == readers
    diff = json.loads(run(["dvc", "params", "diff", "--json"], project).stdout)
    change = diff["params.yaml"]["backend.scoring.memory_mb"]
    assert (change["old"], change["new"]) == (1024, 1000)


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


# --- DVC's run cache: a configuration run once is restored, never retrained -------------------------

RFT_READERS = ("policy@backend-rft", "policy@frontend-rft", "evaluate_policy@backend-rft", "report")


def set_rft_learning_rate(project: Path, value: float) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["policies"]["rft"]["learning_rate"] = value
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def ran(output: str) -> list[str]:
    return re.findall(r"Running stage '([^']+)'", output)


def restored(output: str) -> list[str]:
    return re.findall(r"Stage '([^']+)' is cached - skipping run, checking out outputs", output)


def outputs_of(project: Path, stages: tuple[str, ...]) -> dict[str, str]:
    by_name = {s.name: s for s in load_stages(project)}
    return {
        out: content_hash(project / out) for name in stages for out in by_name[name].outs if (project / out).exists()
    }


@pytest.fixture(scope="module")
def two_configurations(repro_project: Path, tmp_path_factory) -> tuple[Path, float, str, dict[str, str]]:
    """The reproduced project after A → B (RFT's learning rate changed), its params set back to A; the
    seconds B took, its params.yaml text and the hashes of the outputs B made."""
    project = copy_of(repro_project, tmp_path_factory.mktemp("run-cache") / "project")
    a = yaml.safe_load((project / "params.yaml").read_text())["policies"]["rft"]["learning_rate"]
    set_rft_learning_rate(project, a * 2)
    b_params = (project / "params.yaml").read_text()
    started = time.monotonic()
    b = run(["dvc", "repro"], project).stdout
    b_seconds = time.monotonic() - started
    assert set(RFT_READERS) <= set(ran(b))
    b_outputs = outputs_of(project, RFT_READERS)
    set_rft_learning_rate(project, a)
    return project, b_seconds, b_params, b_outputs


def test_switching_a_parameter_back_restores_its_outputs_from_the_run_cache(two_configurations, repro_project):
    """A → B → A: the second A runs nothing; every output of the stages B reran is A's again."""
    project, b_seconds, _, _ = two_configurations
    started = time.monotonic()
    again = run(["dvc", "repro"], project).stdout
    seconds = time.monotonic() - started
    assert ran(again) == [] and set(RFT_READERS) <= set(restored(again))
    assert outputs_of(project, RFT_READERS) == outputs_of(repro_project, RFT_READERS)
    assert status(project) == {}
    assert seconds < b_seconds, (seconds, b_seconds)  # restoring costs less than training; figures in the notes


def test_dvc_exp_run_of_a_configuration_already_run_restores_it(two_configurations, tmp_path):
    project = copy_of(two_configurations[0], tmp_path / "exp")
    run(["dvc", "repro"], project)  # back at A
    run(["git", "add", "-A"], project)
    run(["git", "commit", "-qm", "A", "--allow-empty"], project)
    learning_rate = yaml.safe_load(two_configurations[2])["policies"]["rft"]["learning_rate"]
    exp = run(["dvc", "exp", "run", "-S", f"policies.rft.learning_rate={learning_rate}"], project).stdout
    assert ran(exp) == [] and set(RFT_READERS) <= set(restored(exp))


def test_a_teammate_restores_a_configuration_from_the_shared_run_cache_without_training(two_configurations, tmp_path):
    """The origin ran A and B and shares its run cache (`sweetflow share`: DVC 3's `push --run-cache` pushes
    the entries, not the outputs of those the workspace does not hold); the teammate's clone, at A,
    switches to B and `dvc repro --pull` restores it, fetching its outputs."""
    project, _, b_params, b_outputs = two_configurations
    origin = copy_of(project, tmp_path / "origin")
    run(["dvc", "repro"], origin)  # at A
    run(["dvc", "remote", "add", "-d", "shared", str(tmp_path / "remote")], origin)
    run(["git", "add", "-A"], origin)
    run(["git", "commit", "-qm", "A, and the team's remote", "--allow-empty"], origin)
    run(["sweetflow", "share"], origin)

    clone = tmp_path / "teammate"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    run(["dvc", "pull", "-q", "--run-cache"], clone)
    assert status(clone) == {}
    (clone / "params.yaml").write_text(b_params)  # B, which only the origin ever ran
    b = run(["dvc", "repro", "--pull"], clone).stdout
    assert ran(b) == [] and set(RFT_READERS) <= set(restored(b))
    assert outputs_of(clone, RFT_READERS) == b_outputs
    assert status(clone) == {}


# --- `reproducibility: portable`: the trained stages give the same bytes on two CPU types ------------------
# `reproducibility: portable`: the trained stages give the same bytes on two CPU types, and differ without it.
#
# One machine stands in for two. "avx512" is this CPU as it is; "avx2" caps each library at AVX2, as on a
# CPU without AVX-512: torch's kernels (ATEN_CPU_CAPABILITY), MKL's dispatch (MKL_ENABLE_INSTRUCTIONS, a
# cap that MKL_CBWR does not override) and oneDNN's (ONEDNN_MAX_CPU_ISA). Portable mode sets
# ATEN_CPU_CAPABILITY to avx2 on both, as it does on a real AVX2 machine: for torch's own kernels the
# two stand-ins agree by construction, for MKL's matrix products the test is real. The stand-in must run
# differently without the pin, or the test proves nothing: native mode is checked to differ first.

CPUS = {
    "avx512": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
}
TRAINED = {  # stage command -> its output
    ("base_model", "backend"): "models/backend/base",
    ("critic", "backend", "with_info"): "models/backend/critics/with_info",
    ("policy", "backend", "rft"): "models/backend/policies/rft",
}


def train_as(project: Path, cpu: str, mode: str, stages=TRAINED) -> dict[str, str]:
    """Run `stages` in `project` as `cpu` in `mode`; the content hash of each output."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    (project / "params.yaml").write_text(yaml.safe_dump({**params, "reproducibility": mode}, sort_keys=False))
    hashes = {}
    for args, out in stages.items():
        run(
            ["env", *(f"{k}={v}" for k, v in CPUS[cpu].items()), "python", "-m", f"stages.{args[0]}", *args[1:]],
            project,
        )
        hashes[out] = content_hash(project / out)
    return hashes


@pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() != "AVX512", reason="stands in for an AVX2 CPU on an AVX-512 one"
)
def test_portable_mode_gives_two_cpu_types_the_same_trained_models(repro_project: Path, tmp_path: Path):
    projects = {cpu: shutil.copytree(repro_project, tmp_path / cpu, symlinks=True) for cpu in CPUS}
    base = {("base_model", "backend"): TRAINED[("base_model", "backend")]}
    native = {cpu: train_as(project, cpu, "native", base) for cpu, project in projects.items()}
    assert native["avx512"] != native["avx2"], "the stand-in CPUs compute alike even natively: nothing is tested"

    portable = {cpu: train_as(project, cpu, "portable") for cpu, project in projects.items()}
    assert portable["avx512"] == portable["avx2"]
    out = TRAINED[("base_model", "backend")]
    assert portable["avx512"][out] != native["avx512"][out]  # MKL's COMPATIBLE branch: other sums, other bytes
    for cpu, project in projects.items():
        kernels = json.loads((project / "reports/runs/policy@backend-rft.json").read_text())["machine"]["kernels"]
        assert kernels == {
            "mode": "portable",
            "aten_kernels": "AVX2",
            "mkl_branch": 3,
            "aten_cpu_capability": "avx2",
            "mkl_cbwr": "COMPATIBLE",
        }, cpu
