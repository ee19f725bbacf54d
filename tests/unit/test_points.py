"""An experiment run a point at a time (sweetflow/points.py): which points a record lacks, what a finished
point writes into it (and that a point whose stage did not finish writes nothing), and the table's paired
intervals over the seeds both methods have. tests/integration/test_points.py runs a point for real."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweetflow.cli import main
from sweetflow.core.artifacts import write_json, write_run_record
from sweetflow.core.errors import InputError
from sweetflow.experiments import experiment_params
from sweetflow.points import (
    BASE,
    OUTCOME_COLUMNS,
    TABLE,
    Point,
    decide,
    missing,
    plan,
    point_file,
    render,
    summary,
    upstream_outputs,
    write_point,
    write_summary,
)
from sweetflow.report.intervals import paired_bootstrap

ROOT = Path(__file__).resolve().parents[2]
FAITHFUL = ROOT / "configs" / "experiments" / "smollm2-faithful.yaml"
TUNED = [
    ROOT / "reports" / "experiments" / "smollm2-faithful" / "tuning" / f"{t}.json"
    for t in ("backend-critics", "backend")
]
METHODS = (BASE, "rft", "mtdpo", "sweet", "sweet_no_info")


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """A project's workspace as a point's experiment leaves it: dvc.yaml says where each stage wrote."""
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def seed_metrics(seed: int, success: float) -> dict:
    return {"success_rate": success, "tests_passed": success + 0.25, "count": 500, "mean_turns": 3.0 + seed}


def episodes(successes: list[bool], seed: int) -> pl.DataFrame:
    """A seed's evaluation as its stage writes it: the outcome columns and the dialogue beside them."""
    n = len(successes)
    return pl.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(n)],
            "sample": pl.Series([0] * n, dtype=pl.Int32),
            "seed": [seed] * n,
            "success": successes,
            "reward": [float(s) for s in successes],
            "n_turns": pl.Series([2] * n, dtype=pl.Int32),
            "ended_by": ["answer"] * n,
            "dialogue": ["a long dialogue"] * n,
        }
    )


def hold(record: Path, method: str, seed: int) -> Path:
    """A point file in `record`, as a finished point leaves it (only its name matters to the plan)."""
    path = point_file(record, Point(method, seed))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"method": method, "seed": seed})
    return path


def finished(method: str, seed: int, successes: list[bool]) -> None:
    """The workspace after the point's experiment: its test (and validation) metrics and episodes."""
    out = Path(f"data/backend/evaluations/{method}")
    out.mkdir(parents=True, exist_ok=True)
    episodes(successes, seed).write_parquet(out / f"trajectories-seed{seed}.parquet")
    rate = sum(successes) / len(successes)
    test = Path(f"reports/backend/{method}/metrics.json")
    test.parent.mkdir(parents=True, exist_ok=True)
    write_json(test, {"success_rate": rate, "seeds": {str(seed): seed_metrics(seed, rate)}})
    if method != BASE:
        for stage, metrics in (("validation", seed_metrics(seed, 0.5)), ("policies", {"final_loss": 0.6})):
            path = Path(f"reports/backend/stages/{stage}/{method}/metrics.json")
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(path, {"seeds": {str(seed): metrics}})


def test_the_plan_goes_seed_by_seed_through_the_base_and_every_policy():
    points = plan(experiment_params(FAITHFUL, ROOT / "params.yaml"))
    assert points == [Point(m, s) for s in (0, 1, 2) for m in METHODS]
    assert points[1].targets("backend") == ["validate@backend-rft", "evaluate_policy@backend-rft"]
    assert points[0].targets("backend") == ["evaluate_base@backend"]
    assert points[3].experiment("smollm2-faithful") == "smollm2-faithful-sweet-seed0"


@given(held=st.sets(st.tuples(st.sampled_from(METHODS), st.integers(0, 2))))
@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_record_skips_exactly_the_points_it_holds_in_the_plans_order(tmp_path_factory, held):
    record = tmp_path_factory.mktemp("record")
    points = [Point(m, s) for s in (0, 1, 2) for m in METHODS]
    for method, seed in held:
        hold(record, method, seed)
    assert missing(record, points) == [p for p in points if (p.method, p.seed) not in held]


def test_a_finished_point_keeps_its_seeds_metrics_and_outcomes_without_the_dialogues(workspace):
    finished("sweet", 1, [True, False, True, True])
    record = workspace / "record"
    path = write_point(record, "backend", Point("sweet", 1), "faithful-sweet-seed1", "fp32")
    data = json.loads(path.read_text())
    assert data["test"] == seed_metrics(1, 0.75) and data["validation"] == seed_metrics(1, 0.5)
    assert data["training"] == {"final_loss": 0.6}
    assert data["experiment"] == "faithful-sweet-seed1" and data["ran_on"]["precision"] == "fp32"
    assert data["code"]["git_commit"] is None  # the workspace here is no git repository
    assert data["ran_on"]["cpu"] and data["ran_on"]["kernels"] is None  # no run record here says which
    outcomes = pl.read_parquet(record / "outcomes" / "sweet" / "trajectories-seed1.parquet")
    assert outcomes.columns == list(OUTCOME_COLUMNS)
    assert outcomes.equals(episodes([True, False, True, True], 1).select(OUTCOME_COLUMNS))


def test_a_point_names_the_kernels_its_test_evaluation_ran_with(workspace):
    """An AVX-512 machine told to use AVX2 kernels computes what AVX2 machines do: the record must say which ran."""
    finished("mtdpo", 0, [True, False])
    write_run_record("evaluate_policy@backend-mtdpo", {"machine": {"kernels": {"aten_kernels": "AVX2"}}})
    write_run_record("validate@backend-mtdpo", {"machine": {"kernels": {"aten_kernels": "AVX512"}}})
    record = workspace / "record"
    data = json.loads(write_point(record, "backend", Point("mtdpo", 0), "x", "fp32").read_text())
    assert data["ran_on"]["kernels"] == "AVX2"
    assert summary(record, "backend", [0])["methods"]["mtdpo"]["ran_on"][0].endswith(", AVX2 kernels, fp32")


def test_a_point_whose_evaluation_lacks_its_seed_is_refused_and_writes_nothing(workspace):
    finished("rft", 0, [True, False])  # the stage ran seed 0; the point asks for seed 2
    record = workspace / "record"
    earlier = hold(record, "rft", 0)
    shutil.copy(Path("data/backend/evaluations/rft/trajectories-seed0.parquet"), "seed2.parquet")
    shutil.move("seed2.parquet", "data/backend/evaluations/rft/trajectories-seed2.parquet")
    with pytest.raises(InputError, match=r"reports/backend/rft/metrics.json: field 'seeds.2'"):
        write_point(record, "backend", Point("rft", 2), "x", "fp32")
    assert not point_file(record, Point("rft", 2)).exists()
    assert not (record / "outcomes" / "rft" / "trajectories-seed2.parquet").exists()
    assert json.loads(earlier.read_text()) == {"method": "rft", "seed": 0}


@given(
    a=st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=3),
    b=st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=3),
)
@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_comparison_pairs_tasks_over_the_seeds_both_methods_have(tmp_path_factory, monkeypatch, a, b):
    """SWEET-RL at len(a) seeds, MT-DPO at len(b): the interval is the two-level bootstrap (tasks paired, each
    method's seeds resampled) over the seeds both have, and each method's row is its mean over its own seeds."""
    root = tmp_path_factory.mktemp("ws")
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    (root / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    monkeypatch.chdir(root)
    record = root / "record"
    for method, seeds in (("sweet", a), ("mtdpo", b)):
        for seed, successes in enumerate(seeds):
            finished(method, seed, successes)
            write_point(record, "backend", Point(method, seed), f"{method}-{seed}", "fp32")
    data = summary(record, "backend", [0, 1, 2])
    common = range(min(len(a), len(b)))

    def means(seeds):
        return {f"trajectories-seed{s}": {f"t{i}": float(seeds[s][i]) for i in range(6)} for s in common}

    [compared] = data["comparisons"]
    expected = paired_bootstrap(means(a), means(b), ("sweet", "mtdpo"))
    assert (compared["a"], compared["b"], compared["seeds"]) == ("sweet", "mtdpo", list(common))
    assert compared["difference"] == pytest.approx(expected.difference)
    assert (compared["low"], compared["high"]) == pytest.approx((expected.low, expected.high))
    assert data["methods"]["sweet"]["success_rate"] == pytest.approx(sum(map(sum, a)) / (6 * len(a)))
    assert data["methods"]["sweet"]["seeds"] == list(range(len(a)))
    # The rule decides only once both have every planned seed.
    verdict = decide(expected.low, expected.high) if len(common) == 3 else "pending"
    assert data["decision"]["verdict"] == verdict
    assert ("pending until both have seeds 0, 1, 2" in render(data, "backend")) == (verdict == "pending")


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.001, 0.09, "better"),
        (-0.09, -0.001, "worse"),
        (-0.05, 0.05, "equivalent"),
        (-0.049, 0.0, "equivalent"),
        (-0.051, 0.03, "not told apart"),
        (-0.02, 0.12, "not told apart"),
    ],
)
def test_the_decision_reads_an_interval_as_the_committed_rule(low, high, verdict):
    """docs/real-model.md: better or worse if the interval excludes 0, equivalent if it lies inside ±5 points."""
    assert decide(low, high) == verdict


def test_methods_choose_and_order_the_points_seed_by_seed():
    params = experiment_params(FAITHFUL, ROOT / "params.yaml")
    assert plan(params, ["mtdpo", "sweet"]) == [Point(m, s) for s in (0, 1, 2) for m in ("mtdpo", "sweet")]
    with pytest.raises(InputError, match=r"--methods: no policy \['dpo'\]"):
        plan(params, ["sweet", "dpo"])


def test_print_lists_only_the_points_the_record_lacks_each_at_its_seed(tmp_path, capsys):
    record = tmp_path / "record"
    for method in METHODS:
        hold(record, method, 0)
    args = ["experiment", str(FAITHFUL), "--params", str(ROOT / "params.yaml"), "--points", str(record), "--print"]
    assert main([*args, *(x for t in TUNED for x in ("--tuned", str(t)))]) == 0
    out = capsys.readouterr().out
    commands = [line for line in out.splitlines() if line.startswith("dvc exp run")]
    assert len(commands) == 10 and all("-S 'seeds=[0]'" not in c for c in commands)
    first = commands[0]
    assert first.startswith("dvc exp run -n smollm2-faithful-zero_shot-seed1 ")
    assert "-S 'seeds=[1]'" in first and first.endswith(" evaluate_base@backend")
    assert commands[1].endswith("validate@backend-rft evaluate_policy@backend-rft")
    assert "policies.sweet.learning_rate=1.0e-06" in commands[1]  # the tuned choices, as a whole run has them


RECORD = ROOT / "reports" / "experiments" / "smollm2-faithful"
# docs/real-model.md's step 4 table names each method by its report label.
STEP_4_ROWS = {
    "Base policy, warm-started": BASE,
    "MT-DPO": "mtdpo",
    "SWEET-RL": "sweet",
    "RFT": "rft",
    "SWEET-RL's ablation": "sweet_no_info",
}


def percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}"


def interval(c: dict) -> str:
    """A comparison as the documents write it, e.g. "+2.8 [−0.7, +6.3]" (with the minus sign)."""
    text = f"{100 * c['difference']:+.1f} [{100 * c['low']:+.1f}, {100 * c['high']:+.1f}]"
    return text.replace("-", "−")


def test_the_real_model_docs_state_the_faithful_records_points_and_its_reading():
    """docs/real-model.md's step 4 table is filled in by hand as each point lands: each figure it gives is the
    committed point's, a seed without a point says so, and the decision rule's interval in the README,
    docs/results.md and docs/real-model.md is the record's."""
    data = json.loads((RECORD / f"{TABLE}.json").read_text())
    doc = (ROOT / "docs" / "real-model.md").read_text()
    section = doc[doc.index("### Step 4's result") :]
    rows = {}
    lines = section.splitlines()
    for line in lines[lines.index("| method | seed 0 | seed 1 | seed 2 | mean | tests passed (mean) |") + 2 :]:
        if not line.startswith("|"):
            break
        name, *cells = (cell.strip() for cell in line.strip("|").split("|"))
        rows[STEP_4_ROWS[name]] = cells
    assert set(rows) == set(STEP_4_ROWS.values())
    for method, (*seed_cells, mean, tests_passed) in rows.items():
        point = data["methods"].get(method, {"per_seed": {}})
        for seed, cell in enumerate(seed_cells):
            held = point["per_seed"].get(str(seed))
            assert cell in ((percent(held["success_rate"]),) if held else ("running", "")), (method, seed)
        complete = len(point["per_seed"]) == 3
        assert mean == (percent(point["success_rate"]) if complete else ""), method
        if point["per_seed"]:
            assert tests_passed.startswith(percent(point["tests_passed"])), method
    decision = data["decision"]
    decisive = next(c for c in data["comparisons"] if (c["a"], c["b"]) == (decision["a"], decision["b"]))
    for document in ("README.md", "docs/results.md", "docs/real-model.md"):
        assert interval(decisive) in (ROOT / document).read_text(), document


def test_a_point_names_every_output_upstream_of_its_stages_with_its_hash(tmp_path):
    """The lock's chain tasks → rollout → critic → policy → evaluate: the evaluation's point names each output
    it was computed from, through the stages before it, and no code file nor anything downstream."""
    lock = {
        "schema": "2.0",
        "stages": {
            "tasks@backend": {
                "deps": [{"path": "sweetflow/tasks.py", "md5": "c0"}],
                "outs": [{"path": "t", "md5": "T"}],
            },
            "rollout@backend": {"deps": [{"path": "t", "md5": "T"}], "outs": [{"path": "r", "md5": "R.dir"}]},
            "critic@backend-a": {"deps": [{"path": "r", "md5": "R.dir"}], "outs": [{"path": "c", "md5": "C.dir"}]},
            "policy@backend-s": {
                "deps": [{"path": "c", "md5": "C.dir"}, {"path": "t", "md5": "T"}],
                "outs": [{"path": "p", "md5": "P.dir"}],
            },
            "evaluate_policy@backend-s": {"deps": [{"path": "p", "md5": "P.dir"}], "outs": [{"path": "e", "md5": "E"}]},
            "report": {"deps": [{"path": "e", "md5": "E"}], "outs": [{"path": "x", "md5": "X"}]},
        },
    }
    path = tmp_path / "dvc.lock"
    path.write_text(yaml.safe_dump(lock))
    assert upstream_outputs(path, ["evaluate_policy@backend-s"]) == {"c": "C.dir", "p": "P.dir", "r": "R.dir", "t": "T"}
    path.write_text("not: [a lock")
    with pytest.raises(InputError, match="not a DVC lock file"):
        upstream_outputs(path, ["report"])


def test_a_record_decides_on_the_comparison_it_was_given_and_a_re_render_keeps_it(workspace):
    record = workspace / "record"
    for method, successes in (("sweet", [True, True, True]), ("sweet_no_info", [False, False, False])):
        for seed in range(3):
            finished(method, seed, successes)
            write_point(record, "backend", Point(method, seed), f"{method}-{seed}", "fp32")
    data = write_summary(record, "backend", [0, 1, 2], ("sweet", "sweet_no_info"))
    assert (data["decision"]["a"], data["decision"]["b"]) == ("sweet", "sweet_no_info")
    assert data["decision"]["verdict"] == "better"  # every task and seed better: no variance
    again = write_summary(record, "backend", [0, 1, 2])
    assert again["decision"] == data["decision"]
    assert "SWEET-RL is better than SWEET-RL without training-time information" in (record / "points.md").read_text()
