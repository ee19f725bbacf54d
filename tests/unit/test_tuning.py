"""Equal-budget tuning: the same grid for every policy, the choice on validation metrics only."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.tuning import (
    OFFICIAL_NLL,
    Trial,
    choose,
    configurations,
    describe,
    experiment_name,
    launch,
    queue_command,
    render,
    tuned_on,
    write_table,
)
from tests.support.project import tool_env

HEADLINE = ("tests_passed", "success_rate")
METHODS = ("rft", "mtdpo", "sweet")


def test_every_preference_method_gets_the_same_grid_and_rft_the_same_without_nll():
    mtdpo, sweet, rft = configurations("mtdpo"), configurations("sweet"), configurations("rft")
    assert mtdpo == sweet
    assert [{k: v for k, v in c.items() if not k.startswith("nll")} for c in mtdpo[::3]] == rft
    assert sum(c.get("nll_span") == "dialogue" and c.get("nll_mean") == "sequence" for c in mtdpo) == len(rft)
    assert len({json.dumps(c, sort_keys=True) for c in mtdpo}) == len(mtdpo)


def test_names_are_distinct_git_ref_safe_and_name_the_policy():
    names = [experiment_name("backend", p, c) for p in ("sweet", "sweet_no_info") for c in configurations("sweet")]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", n) for n in names)
    assert names[0].startswith("tune-backend-sweet-lr")


@given(stem=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,30}", fullmatch=True))
def test_a_tuning_on_an_experiment_file_is_named_apart_and_read_back(stem):
    """Two experiment files tuned at one commit (scale-3000 and scale-15000) must not share a name:
    the second would be skipped as done, and its table would mix in the first's trials."""
    config = {"learning_rate": 1e-4, "epochs": 1}
    alone, on = experiment_name("backend", "sweet", config), experiment_name("backend", "sweet", config, stem)
    assert on != alone and on.startswith(alone) and re.fullmatch(r"[A-Za-z0-9_-]+", on)
    assert tuned_on(alone) is None and tuned_on(on) == stem.replace("+", "").replace(".", "p")
    assert tuned_on(experiment_name("backend", "sweet", config, "smollm2")) == "smollm2"
    assert tuned_on(experiment_name("backend", "sweet_no_info", config, "train-on-more")) == "train-on-more"


def test_an_experiment_targets_only_the_validation_stage():
    cmd = queue_command("backend", "sweet", {"learning_rate": 0.001, "epochs": 4, "nll_coef": 0.01})
    assert cmd[:4] == ["dvc", "exp", "run", "--queue"] and cmd[-1] == "validate@backend-sweet"
    assert "policies.sweet.learning_rate=0.001" in cmd and "policies.sweet.nll_coef=0.01" in cmd
    assert not any("evaluate" in part for part in cmd)


def trial(policy: str, lr: float, epochs: int, success: float, tests: float) -> Trial:
    return Trial(
        policy,
        f"{policy}-{lr}-{epochs}",
        {"learning_rate": lr, "epochs": epochs},
        {"success_rate": success, "tests_passed": tests},
    )


@pytest.mark.parametrize(
    "trials, expected",
    [
        ([trial("rft", 1e-4, 1, 0.2, 0.5), trial("rft", 1e-3, 4, 0.3, 0.4)], "rft-0.001-4"),  # success first
        ([trial("rft", 1e-4, 1, 0.3, 0.5), trial("rft", 1e-3, 4, 0.3, 0.6)], "rft-0.001-4"),  # then tests passed
        ([trial("rft", 1e-4, 4, 0.3, 0.5), trial("rft", 1e-3, 1, 0.3, 0.5)], "rft-0.001-1"),  # then fewer epochs
    ],
)
def test_the_choice_follows_the_goal_metric_then_the_other_then_the_cost(trials, expected):
    assert choose(trials, HEADLINE, "success_rate")["rft"].experiment == expected


def test_the_table_lists_every_trial_and_marks_one_per_policy(tmp_path):
    official = Trial(
        "sweet",
        "sweet-official",
        {"learning_rate": 1e-4, "epochs": 1, **OFFICIAL_NLL},
        {"success_rate": 0.1, "tests_passed": 0.4},
    )
    trials = [
        trial("rft", 1e-4, 1, 0.2, 0.5),
        trial("rft", 1e-3, 4, 0.3, 0.4),
        trial("sweet", 1e-4, 1, 0.25, 0.5),
        official,
    ]
    best = choose(trials, HEADLINE, "success_rate")
    table = render("backend", trials, best, HEADLINE)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == 4 and sum("**yes**" in r for r in rows) == 2
    assert "| `sweet` | 0.0001 | 1 | 0.01 (dialogue, per sequence) | 40.0 | 10.0 |  |" in rows
    assert "| `rft` | 0.001 | 4 | — | 40.0 | 30.0 | **yes** |" in rows
    assert "the preference methods the NLL term" in table  # two NLL settings were tried
    write_table("backend", trials, best, HEADLINE, tmp_path)
    data = json.loads((tmp_path / "backend.json").read_text())
    assert len(data["trials"]) == 4 and data["chosen"]["sweet"]["config"] == {"learning_rate": 1e-4, "epochs": 1}


def test_the_lr_epochs_grid_gives_every_method_the_same_four_configurations():
    grids = {m: configurations(m, nll=False) for m in ("rft", "mtdpo", "sweet")}
    assert all(len(g) == 4 and g == grids["rft"] for g in grids.values())
    assert all(set(c) == {"learning_rate", "epochs"} for c in grids["sweet"])


@given(
    rates=st.lists(st.floats(1e-7, 1e-1), min_size=1, max_size=4, unique=True),
    epochs=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True),
)
def test_a_chosen_grid_is_the_same_for_every_method_and_names_each_run_apart(rates, epochs):
    grids = {m: configurations(m, nll=False, learning_rates=tuple(rates), epochs=tuple(epochs)) for m in METHODS}
    assert all(g == grids["rft"] for g in grids.values()) and len(grids["rft"]) == len(rates) * len(epochs)
    names = {experiment_name("backend", "sweet", c) for c in grids["sweet"]}
    assert len(names) == len(rates) * len(epochs)


def test_an_experiment_file_runs_under_every_configuration():
    overlay = ["-S", "train_domains=[frontend]"]
    cmd = queue_command("frontend", "rft", {"learning_rate": 0.001, "epochs": 1}, overlay)
    # The experiment's values first, the configuration's own after them.
    assert cmd.index("train_domains=[frontend]") < cmd.index("policies.rft.learning_rate=0.001")


def test_a_chosen_configuration_prints_with_its_text_values():
    config = {"learning_rate": 1e-4, "epochs": 4, "nll_coef": 0.01, "nll_span": "dialogue", "nll_mean": "sequence"}
    assert (
        describe(config) == "learning_rate: 0.0001, epochs: 4, nll_coef: 0.01, nll_span: dialogue, nll_mean: sequence"
    )


def test_a_configuration_run_in_the_workspace_is_the_queued_experiment_run_at_once():
    config = {"learning_rate": 0.001, "epochs": 1}
    queued = queue_command("frontend", "rft", config, ["-S", "train_domains=[frontend]"])
    at_once = queue_command("frontend", "rft", config, ["-S", "train_domains=[frontend]"], queued=False)
    assert "--queue" in queued and "--queue" not in at_once
    assert [a for a in queued if a != "--queue"] == at_once


def test_a_grid_without_nll_settings_is_described_as_such():
    trials = [trial("sweet", 1e-4, 1, 0.25, 0.5), trial("sweet", 1e-3, 1, 0.2, 0.4)]
    table = render("frontend", trials, choose(trials, HEADLINE, "success_rate"), HEADLINE)
    assert "learning rate (0.0001, 0.001) × epochs (1) (the NLL term as params.yaml has it)" in table


def test_a_configuration_that_ran_on_this_commit_is_skipped_so_tuning_resumes(tmp_path, monkeypatch):
    """DVC refuses a second experiment of a name; an interrupted tuning run again skips what it has."""
    for key, value in tool_env().items():
        monkeypatch.setenv(key, value)  # the venv's dvc, and a git identity for DVC's commits

    def run(*command):
        subprocess.run(command, cwd=tmp_path, check=True, capture_output=True, text=True)

    run("git", "init", "-q", "-b", "main")
    run("dvc", "init", "-q")
    (tmp_path / "dvc.yaml").write_text("stages:\n  note:\n    cmd: echo done > note.txt\n    outs: [note.txt]\n")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "project")
    ran = experiment_name("backend", "rft", {"learning_rate": 1e-4, "epochs": 1})
    run("dvc", "exp", "run", "-n", ran)
    grid = {"nll": False, "root": tmp_path, "queued": False, "epochs": (1,)}
    assert launch("backend", {"rft": "rft"}, learning_rates=(1e-4,), **grid) == [ran]  # not run again
    with pytest.raises(subprocess.CalledProcessError):  # the same configuration on an experiment file is run
        launch("backend", {"rft": "rft"}, learning_rates=(1e-4,), on="smollm2", **grid)
    with pytest.raises(subprocess.CalledProcessError):  # one it lacks is run: this project has no such stage
        launch("backend", {"rft": "rft"}, learning_rates=(1e-4, 1e-3), **grid)
