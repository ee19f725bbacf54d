"""The report (sweetflow/report/, stages/report.py) on synthetic metrics and curves: Table 2's row
order and cells, the paper's numbers beside the right rows, the goal check both ways, missing
methods, malformed inputs, and reproducible PNGs."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import matplotlib.image
import polars as pl
import pytest

from sweetflow.core.errors import InputError
from sweetflow.core.params import DOMAINS
from sweetflow.domain_report import get_domain_report
from sweetflow.report.plots import plot_curves, plot_methods
from sweetflow.report.read import (
    find_curves,
    goal_check,
    read_domain,
    read_methods,
    table_rows,
)
from tests.support.project import ROOT

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def single(success: float, tests: float) -> dict:
    return {
        "count": 200,
        "failures": 0,
        "mean_turns": 3.4,
        "protocol_followed": 0.995,
        "success_rate": success,
        "tests_passed": tests,
    }


def over_seeds(successes: list[float], tests: list[float]) -> dict:
    """Shape of a checkpoint evaluated once per seed: means, sample stds, and the per-seed runs."""

    def mean(xs):
        return sum(xs) / len(xs)

    def std(xs):
        m = mean(xs)
        return (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5 if len(xs) > 1 else 0.0

    runs = {str(k): single(s, t) for k, (s, t) in enumerate(zip(successes, tests))}
    return {
        **single(mean(successes), mean(tests)),
        "success_rate_std": std(successes),
        "tests_passed_std": std(tests),
        "seeds": runs,
    }


def write_metrics(root: Path, method: str, data: dict | str, domain: str = "backend") -> Path:
    path = root / "reports" / domain / method / "metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def write_tsv(path: Path, name: str, values: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"step\t{name}\n" + "".join(f"{10 * (i + 1)}\t{v}\n" for i, v in enumerate(values)))


# Success ordering sweet > mtdpo > rft >= zero_shot, gap 0.10 over spreads of at most 0.02.
HOLDS = {
    "zero_shot": over_seeds([0.10, 0.10, 0.10], [0.30, 0.32, 0.34]),
    "rft": over_seeds([0.19, 0.20, 0.21], [0.40, 0.41, 0.42]),
    "mtdpo": over_seeds([0.28, 0.30, 0.32], [0.48, 0.50, 0.52]),
    "sweet": over_seeds([0.38, 0.40, 0.42], [0.55, 0.57, 0.59]),
    "sweet_no_info": over_seeds([0.30, 0.31, 0.32], [0.44, 0.44, 0.44]),
    "expert": single(1.0, 1.0),
    "no_ask": single(0.0, 0.146),
    "reference": {"count": 200, "statuses": {"ok": 200}, "success_rate": 1.0, "tests_passed": 1.0},
}
FRONTEND = {
    "expert": {"similarity": 0.93, "win_rate": 0.97, "count": 100, "mean_turns": 6.8},
    "no_ask": {"similarity": 0.41, "win_rate": 0.5, "count": 100, "mean_turns": 1.0},
    "reference": {"similarity": 1.0, "win_rate": 1.0, "count": 100},
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")  # seeds [0, 1, 2], the backend trained
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")  # the stage's definition: its params sections
    monkeypatch.setattr(sys, "argv", ["report"])
    return tmp_path


def rows_of(root: Path, domain: str = "backend") -> list:
    report = get_domain_report(domain)
    return table_rows(read_methods(domain, report), report)


def section(markdown: str, domain: str) -> str:
    """The part of results.md about one domain."""
    title = get_domain_report(domain).title
    return markdown.split(f"## {title}")[1].split("\n## ")[0]


def goal_part(markdown: str, domain: str = "backend") -> str:
    return section(markdown, domain).split("### Goal check")[1].split("###")[0]


def table_lines(markdown: str, domain: str = "backend") -> dict[str, list[str]]:
    """One domain's Table 2 rows of results.md by method key, each as its list of cells."""
    rows = {}
    for line in section(markdown, domain).splitlines():
        m = re.match(r"\| (.+?) \| `(\w+)` \|(.*)\|$", line)
        if m and "held-out" not in line:
            rows[m.group(2)] = [m.group(1)] + [c.strip() for c in m.group(3).split("|")]
    return rows


def run_stage_in(root: Path) -> str:
    from stages.report import main

    main()
    return (root / "reports" / "results.md").read_text()


def test_table_rows_in_paper_order_with_mean_std_and_paper_numbers(project):
    for method, data in HOLDS.items():
        write_metrics(project, method, data)
    markdown = run_stage_in(project)
    rows = table_lines(markdown)
    assert list(rows) == ["zero_shot", "rft", "mtdpo", "sweet", "sweet_no_info", "expert", "no_ask"]
    # label, tests passed, success, seeds, paper tests passed, paper success
    assert rows["sweet"] == ["SWEET-RL", "57.0 ± 2.0", "40.0 ± 2.0", "3", "56.8", "40.4"]
    assert rows["mtdpo"] == ["Multi-turn DPO", "50.0 ± 2.0", "30.0 ± 2.0", "3", "48.0", "34.4"]
    assert rows["rft"] == ["Rejection fine-tuning", "41.0 ± 1.0", "20.0 ± 1.0", "3", "40.9", "28.2"]
    assert rows["zero_shot"] == ["Zero-shot", "32.0 ± 2.0", "10.0 ± 0.0", "3", "34.2", "22.4"]
    assert rows["sweet_no_info"] == [
        "SWEET-RL without training-time information",
        "44.0 ± 0.0",
        "31.0 ± 1.0",
        "3",
        "44.0",
        "31.2",
    ]
    # Single runs: plain values, and no paper numbers for the scripted bounds.
    assert rows["expert"][1:] == ["100.0", "100.0", "1", "—", "—"]
    assert rows["no_ask"][1:] == ["14.6", "0.0", "1", "—", "—"]
    # The reference is a sanity check under the table, not a method.
    assert "reference" not in rows
    assert (
        "References scored as answers (sanity check of the benchmark, expected 100%): 100.0% tests passed" in markdown
    )
    assert "Compare the ordering of the methods, not the values" in markdown and "Llama-3.1-8B" in markdown
    assert "starts from" not in markdown  # no base model recorded: nothing said about it
    assert "3 seeds (0, 1, 2)" in markdown
    assert "](summary/methods.png)" in markdown and "](summary/training_curves.png)" in markdown
    summary = project / "reports" / "summary"
    assert {p.name for p in summary.iterdir()} == {
        "results.md",
        "results.json",
        "methods.png",
        "training_curves.png",
        "methods-backend.csv",
        "methods-frontend.csv",
        "manifest.json",
    }
    # The data of dvc.yaml's side-by-side plots: every method that ran, in %.
    methods = (summary / "methods-backend.csv").read_text().splitlines()
    assert methods[0] == "method,tests passed,success" and "sweet,57.00,40.00" in methods and len(methods) == 8
    assert (summary / "methods-frontend.csv").read_text() == "method,similarity,win rate\n"  # none ran
    # The copy inside summary/ links to its sibling files.
    assert "](./methods.png)" in (summary / "results.md").read_text()
    data = json.loads((summary / "results.json").read_text())["domains"]["backend"]
    assert [r["method"] for r in data["rows"]] == list(rows)
    assert data["goal_check"]["ordering_holds"] is True


def test_goal_check_holds(project):
    for method, data in HOLDS.items():
        write_metrics(project, method, data)
    goal = goal_part(run_stage_in(project))
    assert "on mean success **holds**" in goal
    assert "larger of the two methods' sample standard deviations" in goal
    assert "10.0 points" in goal and "is 2.0 points: gap > spread **holds**" in goal
    assert "does not hold" not in goal


def test_goal_check_does_not_hold_when_the_gap_is_within_the_spread(project):
    # Ordering holds on the means, but SWEET-RL beats MT-DPO by 2 points with a 5-point spread.
    data = dict(HOLDS, sweet=over_seeds([0.27, 0.32, 0.37], [0.5, 0.5, 0.5]))
    for method, d in data.items():
        write_metrics(project, method, d)
    check = goal_check(rows_of(project), get_domain_report("backend"))
    assert check["ordering_holds"] is True
    assert check["gap"] == pytest.approx(0.02) and check["spread"] == pytest.approx(0.05)
    assert check["gap_exceeds_spread"] is False
    goal = goal_part(run_stage_in(project))
    assert "gap > spread **does not hold**" in goal


def test_goal_check_reports_a_broken_ordering(project):
    data = dict(HOLDS, rft=over_seeds([0.35, 0.35, 0.35], [0.4, 0.4, 0.4]))
    for method, d in data.items():
        write_metrics(project, method, d)
    goal = goal_part(run_stage_in(project))
    assert "on mean success **does not hold**" in goal
    assert "fails at: Multi-turn DPO vs Rejection fine-tuning" in goal


def test_missing_methods_are_not_run_and_the_check_cannot_be_made(project):
    write_metrics(project, "zero_shot", single(0.0, 0.001))  # old single-run shape
    write_metrics(project, "expert", single(1.0, 1.0))
    markdown = run_stage_in(project)
    rows = table_lines(markdown)
    assert list(rows) == ["zero_shot", "rft", "mtdpo", "sweet", "expert", "no_ask"]
    for method in ("rft", "mtdpo", "sweet", "no_ask"):
        assert rows[method][1:4] == ["not run", "not run", "—"]
    assert rows["sweet"][4:] == ["56.8", "40.4"]  # the paper's numbers still shown
    assert "The check cannot be made" in goal_part(markdown) and "`rft`" in goal_part(markdown)
    assert "sanity check of the benchmark): not run" in section(markdown, "backend")


def test_checkpoints_evaluated_on_other_seeds_than_params_are_flagged(project):
    write_metrics(project, "sweet", over_seeds([0.3, 0.4], [0.5, 0.6]))  # params list 3 seeds
    markdown = run_stage_in(project)
    assert table_lines(markdown)["sweet"][1:4] == ["55.0 ± 7.1", "35.0 ± 7.1", "2"]
    assert "params list 3 seeds but the evaluated checkpoints have 2" in markdown


def test_no_spread_from_single_runs(project):
    for method, success in (("zero_shot", 0.1), ("rft", 0.2), ("mtdpo", 0.3), ("sweet", 0.4)):
        write_metrics(project, method, over_seeds([success], [success]))
    check = goal_check(rows_of(project), get_domain_report("backend"))
    assert check["ordering_holds"] is True and check["spread"] is None and check["gap_exceeds_spread"] is None
    assert "the seed spread cannot be estimated" in run_stage_in(project)


def test_report_with_no_inputs_at_all_is_still_written(project):
    markdown = run_stage_in(project)
    assert all(cells[1] == "not run" for cells in table_lines(markdown).values())
    # The frontend is not in train_domains: only its reference agents' rows are expected.
    assert list(table_lines(markdown, "frontend")) == ["expert", "no_ask"]
    assert (project / "reports" / "summary" / "training_curves.png").is_file()


def test_frontend_table_shows_similarity_and_win_rate_beside_the_papers(project):
    for method, data in FRONTEND.items():
        write_metrics(project, method, data, "frontend")
    write_metrics(project, "zero_shot", over_seeds([0.1], [0.3]))
    markdown = run_stage_in(project)
    rows = table_lines(markdown, "frontend")
    assert list(rows) == ["expert", "no_ask"]
    assert rows["expert"][1:] == ["93.0", "97.0", "1", "—", "—"]
    frontend = section(markdown, "frontend")
    assert "| similarity (%) | win rate (%) |" in frontend and "78.1 / 50.0" in frontend
    assert "expected 100%): 100.0% similarity, 100.0% win rate" in frontend
    assert "zero_shot" in table_lines(markdown, "backend")  # the backend's rows are the backend's
    trained = read_domain(project / "data/frontend/evaluations", "frontend", trained=True)
    assert [r.method for r in trained.rows][:4] == ["zero_shot", "rft", "mtdpo", "sweet"]
    assert trained.rows[3].paper == (77.7, 48.2) and trained.check["metric"] == "win_rate"


@pytest.mark.parametrize(
    "content, field",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"tests_passed": 0.5}), "'success_rate' is missing"),
        (json.dumps({"tests_passed": 0.5, "success_rate": "high"}), "'success_rate' must be a finite number"),
        (json.dumps({**single(0.1, 0.2), "seeds": {"0": {}}}), "'tests_passed_std' is missing"),
    ],
)
def test_malformed_metrics_raise_input_error_naming_file_and_field(project, content, field):
    path = write_metrics(project, "sweet", content)
    with pytest.raises(InputError) as err:
        rows_of(project)
    assert path.relative_to(project).as_posix() in str(err.value) and field in str(err.value)


@pytest.mark.parametrize(
    "metrics, label, described",
    [
        (
            {"data": {"parameters": 583808}, "steps": 1904},
            "Base policy, warm-started (sampled as the zero-shot)",
            "a 0.58M-parameter base policy, warm-started on scripted demonstrations",
        ),
        (
            {"base": "models/external/x.gguf", "parameters": 134515008, "trained": False},
            "Zero-shot",
            "a 135M-parameter",
        ),
    ],
)
def test_the_base_row_says_whether_it_was_warm_started_and_the_intro_its_size(project, metrics, label, described):
    for method, data in HOLDS.items():
        write_metrics(project, method, data)
    path = project / "reports/backend/stages/base_model/metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(metrics))
    markdown = run_stage_in(project)
    assert table_lines(markdown)["zero_shot"][0] == label
    assert f"This run's backend starts from {described}" in markdown


def test_critic_table_joins_training_quality_and_ranking_check(project):
    def write(sub: str, name: str, data: dict) -> None:
        path = project / "reports" / "backend" / "stages" / sub / name / "metrics.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(data))

    write(
        "critics",
        "with_info",
        {
            "train_pairs": 120,
            "heldout_accuracy": 0.75,
            "eval_nll_initial": 0.158,
            "eval_nll_final": 2.314,
            "heldout_kl_to_reference": 0.4567,
        },
    )
    write("critic_check", "with_info", {"ranking_agreement": 0.6, "states": 40, "states_decided": 25})
    write("step_pairs", "with_info", {"score_length_corr": -0.65, "chosen_tokens": 14.5, "rejected_tokens": 43.0})
    write(
        "critic_quality",
        "with_info",
        {"good_vs_bad_accuracy": 0.8125, "informative_pair_share": 0.25, "inverted_pair_share": 0.0625},
    )
    write("critics", "no_info", {"train_pairs": 120, "heldout_accuracy": None})
    markdown = run_stage_in(project)
    row = "| `with_info` | 120 | 75.0 | 81.2 | 25.0 | 6.2 | 60.0 (25) | -0.65 | 14 / 43 | 0.158 → 2.314 | 0.457 |"
    assert row in markdown
    assert "| `no_info` | 120 | — | — | — | — | — | — | — | — | — |" in markdown


STAGES = "reports/backend/stages"


def curves(root: Path) -> None:
    write_tsv(root / STAGES / "base_model/plots/metrics/train/loss.tsv", "loss", [5, 3, 2, 1.5])
    write_tsv(root / STAGES / "base_model/plots/metrics/eval/loss.tsv", "loss", [2.5, 1.4])
    write_tsv(root / STAGES / "critics/with_info/plots/metrics/train/loss.tsv", "loss", [0.7, 0.6, 0.5])
    write_tsv(root / STAGES / "critics/with_info/plots/metrics/train/rewards/accuracies.tsv", "accuracies", [0.5, 0.7])
    for seed in (10, 2, 0):  # numeric, not lexical, order
        write_tsv(
            root / STAGES / f"policies/sweet/plots/seed{seed}/metrics/train/loss.tsv", "loss", [0.7, 0.65 - seed / 100]
        )
    (root / STAGES / "policies/rft/plots/seed0/metrics/train").mkdir(parents=True)  # started, nothing logged


def test_curve_panels_skip_missing_files(project):
    curves(project)
    panels = find_curves("backend")
    assert [(title, [name for name, _ in lines]) for title, lines in panels] == [
        ("base policy (SFT)", ["train", "eval"]),
        ("critic with_info", ["train"]),
        ("policy sweet", ["seed 0", "seed 2", "seed 10"]),
    ]


def test_pngs_are_valid_and_byte_identical_across_renders(project):
    for method, data in HOLDS.items():
        write_metrics(project, method, data)
    curves(project)
    for method, data in FRONTEND.items():
        write_metrics(project, method, data, "frontend")
    results = [read_domain(project / f"data/{d}/evaluations", d, d == "backend") for d in DOMAINS]
    panels = find_curves("backend", "backend: ")
    renders = []
    for k in range(2):
        out = project / f"render{k}"
        out.mkdir()
        plot_methods(results, out / "methods.png")
        plot_curves(panels, out / "training_curves.png")
        renders.append(out)
    for name in ("methods.png", "training_curves.png"):
        first, second = (r / name for r in renders)
        assert first.read_bytes()[:8] == PNG_SIGNATURE
        image = matplotlib.image.imread(first)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        assert first.read_bytes() == second.read_bytes()


def test_paired_differences_are_tabled_from_the_episodes(project):
    for method, data in HOLDS.items():
        write_metrics(project, method, data)
    for method, successes in (("sweet", [1, 1, 1, 0] * 25), ("mtdpo", [0, 1, 1, 0] * 25), ("rft", [1, 1, 1, 0] * 25)):
        directory = project / "data/backend/evaluations" / method
        directory.mkdir(parents=True)
        frame = pl.DataFrame({"task_id": [f"t{k}" for k in range(100)], "success": [bool(s) for s in successes]})
        frame.write_parquet(directory / "trajectories-seed0.parquet")
    markdown = section(run_stage_in(project), "backend")
    assert "### Paired differences (backend)" in markdown
    assert "| SWEET-RL − Multi-turn DPO | +25.0 | [+" in markdown
    assert "| SWEET-RL − Rejection fine-tuning | +0.0 | [+0.0, +0.0] | no |" in markdown
    assert "without training-time information" not in markdown.split("### Paired differences")[1].split("###")[0]
