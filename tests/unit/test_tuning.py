"""Equal-budget tuning: the same grid for every policy, the choice on validation metrics only."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sweetflow.cli import main
from sweetflow.core.artifacts import machine
from sweetflow.core.errors import InputError
from sweetflow.report.critic_intervals import accuracy_difference
from sweetflow.tuning import (
    OFFICIAL_NLL,
    STEP_PAIR_RULE,
    CriticPair,
    CriticRule,
    CriticTrial,
    Trial,
    at_edge,
    choose,
    choose_critics,
    collect,
    collect_critics,
    compare_critics,
    configurations,
    control_pairs,
    critic_command,
    critic_experiment_name,
    critic_gate,
    describe,
    experiment_name,
    launch,
    launch_critics,
    pair_critics,
    past,
    queue_command,
    read_choices,
    render,
    render_controls,
    render_critics,
    table_path,
    table_records,
    tuned_on,
    with_recorded,
    write_critic_table,
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
    assert "| `sweet` | 0.0001 | 1 | 0.01 (dialogue, per sequence) | — | 40.0 | 10.0 |  | — |" in rows
    assert "| `rft` | 0.001 | 4 | — | — | 40.0 | 30.0 | **yes** | — |" in rows
    assert "the preference methods the NLL term" in table  # two NLL settings were tried
    write_table("backend", trials, best, HEADLINE, tmp_path)
    data = json.loads((tmp_path / "backend.json").read_text())
    assert len(data["trials"]) == 4 and data["chosen"]["sweet"]["config"] == {"learning_rate": 1e-4, "epochs": 1}
    assert read_choices(tmp_path / "backend.json") == ("policies", {t: best[t].config for t in ("rft", "sweet")})


def test_the_lr_epochs_grid_gives_every_method_the_same_four_configurations():
    grids = {m: configurations(m, "lr-epochs") for m in ("rft", "mtdpo", "sweet")}
    assert all(len(g) == 4 and g == grids["rft"] for g in grids.values())
    assert all(set(c) == {"learning_rate", "epochs"} for c in grids["sweet"])


@given(
    rates=st.lists(st.floats(1e-7, 1e-1), min_size=1, max_size=4, unique=True),
    epochs=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True),
)
def test_a_chosen_grid_is_the_same_for_every_method_and_names_each_run_apart(rates, epochs):
    grids = {m: configurations(m, "lr-epochs", tuple(rates), tuple(epochs)) for m in METHODS}
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
    run = dvc_project(tmp_path, monkeypatch)
    (tmp_path / "dvc.yaml").write_text("stages:\n  note:\n    cmd: echo done > note.txt\n    outs: [note.txt]\n")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "project")
    ran = experiment_name("backend", "rft", {"learning_rate": 1e-4, "epochs": 1})
    run("dvc", "exp", "run", "-n", ran)
    grid = {"grid": "lr-epochs", "root": tmp_path, "queued": False, "epochs": (1,)}
    assert launch("backend", {"rft": "rft"}, learning_rates=(1e-4,), **grid) == []  # not run again
    with pytest.raises(subprocess.CalledProcessError):  # the same configuration on an experiment file is run
        launch("backend", {"rft": "rft"}, learning_rates=(1e-4,), on="smollm2", **grid)
    with pytest.raises(subprocess.CalledProcessError):  # one it lacks is run: this project has no such stage
        launch("backend", {"rft": "rft"}, learning_rates=(1e-4, 1e-3), **grid)


@given(
    rates=st.lists(st.floats(1e-7, 1e-1), min_size=1, max_size=4, unique=True),
    epochs=st.lists(st.integers(1, 8), min_size=2, max_size=2, unique=True),
)
def test_the_faithful_grid_gives_every_method_as_many_configurations_of_its_own_knobs(rates, epochs):
    grids = {m: configurations(m, "faithful", tuple(rates), tuple(epochs)) for m in METHODS}
    assert {len(g) for g in grids.values()} == {4 * len(rates)}
    sweet = grids["sweet"]
    # SWEET-RL: the paper's step pairs and the largest gaps, each with no NLL term and the official actor's.
    assert {c[STEP_PAIR_RULE] for c in sweet} == {"halves", "largest_gaps"} and {c["epochs"] for c in sweet} == {1}
    assert sum(c.get("nll_span") == "dialogue" for c in sweet) == sum(c["nll_coef"] == 0 for c in sweet)
    assert not any(STEP_PAIR_RULE in c for c in grids["mtdpo"] + grids["rft"])
    assert {c["epochs"] for c in grids["mtdpo"]} == set(epochs) and {c["epochs"] for c in grids["rft"]} == {1, 2, 3, 4}
    names = {experiment_name("backend", m, c) for m, g in grids.items() for c in g}
    assert len(names) == 12 * len(rates)  # every configuration runs under a name of its own
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", n) for n in names)


def test_a_dotted_key_of_a_configuration_is_set_as_it_is_and_the_others_under_the_policy():
    config = configurations("sweet", "faithful", (1e-5,))[2]
    cmd = queue_command("backend", "sweet", config)
    assert "step_pairs.rule=largest_gaps" in cmd and "policies.sweet.learning_rate=1e-05" in cmd
    assert experiment_name("backend", "sweet", config).endswith("-nll0-largestgaps")


def test_a_critic_experiment_trains_ranks_and_measures_it_on_the_training_split_only():
    cmd = critic_command("backend", "with_info", 2e-6, ["-S", "seeds=[0]"], queued=False, on="smollm2-faithful")
    assert cmd[-1] == "critic_quality@backend-with_info" and "critics.with_info.learning_rate=2e-06" in cmd
    assert cmd.index("seeds=[0]") < cmd.index("critics.with_info.learning_rate=2e-06")
    name = critic_experiment_name("backend", "with_info", 2e-6, "smollm2-faithful")
    assert name == "tunecritic-backend-with_info-lr2e-06-on-smollm2-faithful" and name in cmd
    assert tuned_on(name) == "smollm2-faithful" and not name.startswith("tune-")  # never read as a policy's


def critic_trial(critic: str, lr: float, good: float, held: float | None) -> CriticTrial:
    metrics = {"good_vs_bad_accuracy": good, "heldout_accuracy": held, "states_mixed": 210}
    metrics |= {"eval_nll_initial": 0.15, "eval_nll_final": 0.2, "heldout_kl_to_reference": 0.01}
    return CriticTrial(critic, f"{critic}-{lr}", {"learning_rate": lr}, metrics | {"score_length_corr": -0.3})


@pytest.mark.parametrize(
    "trials, expected",
    [
        ([critic_trial("a", 1e-5, 0.6, 0.9), critic_trial("a", 1e-4, 0.7, 0.5)], "a-0.0001"),  # good vs bad first
        ([critic_trial("a", 1e-5, 0.7, 0.5), critic_trial("a", 1e-4, 0.7, 0.6)], "a-0.0001"),  # then held-out pairs
        ([critic_trial("a", 1e-4, 0.7, 0.6), critic_trial("a", 1e-5, 0.7, 0.6)], "a-1e-05"),  # then the lower rate
        ([critic_trial("a", 1e-4, 0.7, None), critic_trial("a", 1e-5, 0.7, 0.0)], "a-1e-05"),  # no held-out pairs
    ],
)
def test_a_critic_is_chosen_on_good_vs_bad_then_held_out_pairs_then_the_smaller_step(trials, expected):
    assert choose_critics(trials)["a"].experiment == expected


def drifted(critic: str, lr: float, good: float, kl: float | None, held: float = 0.8) -> CriticTrial:
    t = critic_trial(critic, lr, good, held)
    return CriticTrial(t.critic, t.experiment, t.config, t.metrics | {"heldout_kl_to_reference": kl})


def test_the_drift_bounded_rule_gives_both_critics_one_rate_where_both_stayed_language_models():
    rule = CriticRule(kl_bound=0.1)
    trials = [
        drifted("with_info", 2e-7, 0.60, 0.001),
        drifted("no_info", 2e-7, 0.58, 0.001),
        drifted("with_info", 2e-6, 0.76, 0.02),
        drifted("no_info", 2e-6, 0.90, 0.03),  # the ablation's accuracy does not choose
        drifted("with_info", 2e-5, 0.80, 0.09),
        drifted("no_info", 2e-5, 0.52, 0.12),  # past the bound: 2e-5 is out for both
        drifted("with_info", 2e-4, 0.95, 13.0),
        drifted("no_info", 2e-4, 0.95, 9.0),
    ]
    chosen = choose_critics(trials, rule)
    assert {c: t.config["learning_rate"] for c, t in chosen.items()} == {"with_info": 2e-6, "no_info": 2e-6}
    assert sorted(rule.within(trials)) == [2e-7, 2e-6]
    # A rate one critic never ran at cannot be chosen, nor one whose drift was not measured.
    assert choose_critics([drifted("with_info", 2e-5, 0.9, 0.01), *trials[:2]], rule)["with_info"].config == {
        "learning_rate": 2e-7
    }
    assert choose_critics([drifted("with_info", 2e-7, 0.9, None), drifted("no_info", 2e-7, 0.5, 0.0)], rule) == {}
    # Then the lead's held-out pairs, then the lower rate.
    tie = [drifted(c, lr, 0.7, 0.01, held) for c in ("with_info", "no_info") for lr, held in ((1e-6, 0.8), (2e-6, 0.8))]
    assert choose_critics(tie, rule)["no_info"].config["learning_rate"] == 1e-6


def gate_pair(rate: float, low: float, high: float) -> CriticPair:
    estimate = {"value": (low + high) / 2, "low": low, "high": high, "states": 200}
    accuracy = {"a": estimate, "b": estimate, "a_minus_b": estimate, "length_matched": {"a_minus_b": estimate}}
    return CriticPair("with_info", "no_info", rate, rate, accuracy)


@pytest.mark.parametrize(("low", "high", "passed"), [(0.01, 0.2, True), (-0.01, 0.2, False), (-0.2, -0.05, False)])
def test_the_gate_passes_only_when_the_length_matched_interval_lies_above_zero(low, high, passed):
    chosen = {c: drifted(c, 2e-6, 0.7, 0.01) for c in ("with_info", "no_info")}
    pairs = [gate_pair(2e-5, 0.3, 0.4), gate_pair(2e-6, low, high)]  # the chosen rate's pair decides
    gate = critic_gate(pairs, chosen, "with_info", "no_info")
    assert (gate["rate"], gate["passed"], gate["a_minus_b"]["low"]) == (2e-6, passed, low)
    assert critic_gate(pairs, {}, "with_info", "no_info") == {
        "a": "with_info",
        "b": "no_info",
        "rate": None,
        "a_minus_b": None,
        "passed": False,
    }


def test_the_drift_bounded_table_records_its_rule_gate_and_says_when_nothing_qualifies(tmp_path):
    rule = CriticRule(kl_bound=0.1)
    trials = [drifted("with_info", 2e-4, 0.9, 13.0), drifted("no_info", 2e-4, 0.9, 9.0)]
    gate = critic_gate([], {}, "with_info", "no_info")
    markdown = write_critic_table("backend", trials, {}, tmp_path, [], rule, [], gate)
    assert "**No rate qualifies**" in markdown and "The gate **failed**" in markdown
    data = json.loads((tmp_path / "backend-critics.json").read_text())
    assert data["rule"] == {"kl_bound": 0.1, "lead": "with_info"} and data["gate"]["passed"] is False
    assert data["chosen"] == {}


def test_the_official_grid_tunes_sweet_rls_learning_rate_alone():
    grid = configurations("sweet", "official", (2e-7, 1e-6, 5e-6))
    assert [c["learning_rate"] for c in grid] == [2e-7, 1e-6, 5e-6]
    assert all(c[STEP_PAIR_RULE] == "halves" and c["epochs"] == 1 and OFFICIAL_NLL.items() <= c.items() for c in grid)
    assert len({experiment_name("backend", "sweet", c) for c in grid}) == 3
    with pytest.raises(ValueError, match="no configuration of method 'rft'"):
        configurations("rft", "official", (1e-6,))


def test_the_critic_table_shows_accuracy_beside_drift_and_is_read_back_as_critics(tmp_path):
    trials = [critic_trial("with_info", 2e-6, 0.71, 0.8), critic_trial("with_info", 2e-4, 0.65, 0.9)]
    best = choose_critics(trials)
    assert (
        "| `with_info` | 2e-06 | 71.0 | 210 | — | — | 80.0 | 0.150 → 0.200 | 0.010 | -0.30 | **yes** | — |"
        in render_critics("backend", trials, best)
    )
    write_critic_table("backend", trials, best, tmp_path)
    assert read_choices(tmp_path / "backend-critics.json") == ("critics", {"with_info": {"learning_rate": 2e-6}})


def test_a_tuning_table_keeps_its_trials_and_pairs_that_were_not_found_again(tmp_path):
    trials = [critic_trial("with_info", 2e-6, 0.71, 0.8), critic_trial("with_info", 2e-4, 0.65, 0.9)]
    estimate = {"value": 0.1, "low": 0.0, "high": 0.2, "states": 210}
    pair = CriticPair("with_info", "no_info", 2e-6, 2e-6, {"a": estimate, "b": estimate, "a_minus_b": estimate})
    write_critic_table("backend", trials, choose_critics(trials), tmp_path, [pair])
    table = table_path(tmp_path, "backend", critics=True)
    again = CriticTrial("with_info", trials[1].experiment, {"learning_rate": 2e-4}, {"good_vs_bad_accuracy": 0.9})
    kept = with_recorded([again], table, CriticTrial)
    assert kept == [trials[0], again]  # the experiment found here replaces its record; the other stays
    assert with_recorded([], table, CriticPair, "pairs", ("rate_a", "rate_b")) == [pair]
    assert with_recorded([pair], table, CriticPair, "pairs", ("rate_a", "rate_b")) == [pair]  # found: not twice
    assert with_recorded([], tmp_path / "none.json", CriticTrial) == []


def test_a_recorded_critic_pair_stays_only_while_the_comparison_holds_its_rates(tmp_path):
    """Resumed elsewhere (no experiment here), the table's pairs are the record; a pair of rates chosen once
    but no longer (a later trial changed the choice) leaves the table."""
    estimate = {"value": 0.1, "low": 0.0, "high": 0.2, "states": 210}
    accuracy = {"a": estimate, "b": estimate, "a_minus_b": estimate}
    trials = [critic_trial(c, lr, good, 0.5) for c, lr, good in (("a", 1e-5, 0.7), ("a", 1e-4, 0.6), ("b", 1e-5, 0.6))]
    earlier = [CriticPair("a", "b", 1e-5, 1e-5, accuracy), CriticPair("a", "b", 1e-4, 1e-5, accuracy)]
    write_critic_table("backend", trials, choose_critics(trials), tmp_path, earlier)
    table = table_path(tmp_path, "backend", critics=True)
    now = trials + [critic_trial("b", 1e-4, 0.65, 0.5)]  # b at 1e-4 ran here; no outputs are read for it
    pairs = compare_critics("backend", [], now, choose_critics(now), "a", "b", table)
    assert [(p.rate_a, p.rate_b) for p in pairs] == [(1e-5, 1e-5)]
    assert compare_critics("backend", [], now, choose_critics(now), "a", "b") == []  # not resumed: no record read


@pytest.mark.parametrize(
    ("text", "message"),
    [("[1, 2]", "not a tuning table"), ('{"trials": [3]}', "not a mapping"), ('{"trials": [{"x": 1}]}', "fields")],
)
def test_a_broken_tuning_table_is_named_when_resuming(tmp_path, text, message):
    table = tmp_path / "backend.json"
    table.write_text(text)
    with pytest.raises(InputError, match=message) as error:
        with_recorded([], table, Trial)
    assert str(table) in str(error.value)


def dvc_project(tmp_path, monkeypatch):
    """An empty git + DVC project at `tmp_path` with the tools' environment; returns a runner of commands there."""
    for key, value in tool_env().items():
        monkeypatch.setenv(key, value)

    def run(*command):
        subprocess.run(command, cwd=tmp_path, check=True, capture_output=True, text=True)

    run("git", "init", "-q", "-b", "main")
    run("dvc", "init", "-q")
    return run


def test_critic_trials_are_read_back_from_real_dvc_experiments(tmp_path, monkeypatch):
    """Two learning rates of one critic through `dvc exp run` of a stand-in critic_quality stage (its metric
    a function of the rate), then read back from the experiments and chosen, as `sweetflow tune` does."""
    run = dvc_project(tmp_path, monkeypatch)
    (tmp_path / "params.yaml").write_text("critics:\n  with_info:\n    learning_rate: 0.001\n")
    out = "reports/backend/stages/critic_quality/with_info/metrics.json"
    (tmp_path / "measure.py").write_text(
        "import json, pathlib, yaml\n"
        "lr = yaml.safe_load(open('params.yaml'))['critics']['with_info']['learning_rate']\n"
        f"out = pathlib.Path('{out}')\n"
        "out.parent.mkdir(parents=True, exist_ok=True)\n"
        "out.write_text(json.dumps({'good_vs_bad_accuracy': 0.9 - lr, 'states_mixed': 3}))\n"
    )
    # The critic's other stages are not run: tuning finds their metrics where dvc.yaml puts them, the
    # critic's (committed) at a path only dvc.yaml names, the step pairs' nowhere.
    (tmp_path / "elsewhere.json").write_text(json.dumps({"heldout_accuracy": 0.7}))
    unrun = "".join(
        f"  {kind}:\n    matrix: {{domain: [backend], critic: [with_info]}}\n    cmd: exit 1\n"
        f"    metrics: [{metrics}: {{cache: false}}]\n"
        for kind, metrics in (("critic", "elsewhere.json"), ("step_pairs", "reports/step_pairs.json"))
    )
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  critic_quality:\n    matrix: {domain: [backend], critic: [with_info]}\n"
        f"    cmd: python measure.py\n    deps: [measure.py]\n    params: [critics]\n"
        f"    metrics: [{out}: {{cache: false}}]\n" + unrun
    )
    run("git", "add", "-A")
    run("git", "commit", "-qm", "project")
    names = launch_critics("backend", ["with_info"], (1e-4, 1e-2), root=tmp_path, queued=False)
    trials = collect_critics("backend", root=tmp_path)
    assert sorted(t.experiment for t in trials) == sorted(names)
    chosen = choose_critics(trials)["with_info"]
    assert chosen.config == {"learning_rate": 1e-4} and chosen.metrics["good_vs_bad_accuracy"] == pytest.approx(0.8999)
    assert chosen.metrics["heldout_accuracy"] == 0.7 and chosen.metrics["score_length_corr"] is None

    # Carried on elsewhere: a new commit has none of these experiments, the committed table records them.
    write_critic_table("backend", trials, choose_critics(trials), tmp_path / "tuning")
    (tmp_path / "notes.txt").write_text("another machine\n")
    run("git", "add", "notes.txt")
    run("git", "commit", "-qm", "elsewhere")
    skip = frozenset(t["experiment"] for t in table_records(table_path(tmp_path / "tuning", "backend", critics=True)))
    more = launch_critics("backend", ["with_info"], (1e-4, 1e-3), root=tmp_path, queued=False, skip=skip)
    found = collect_critics("backend", root=tmp_path)
    assert [t.config["learning_rate"] for t in found] == [1e-3]  # the recorded 1e-4 was not run again
    kept = with_recorded(found, table_path(tmp_path / "tuning", "backend", critics=True), CriticTrial)
    assert len(more) == 1 and sorted(t.experiment for t in kept) == sorted(names + more)
    assert choose_critics(kept)["with_info"].config == {"learning_rate": 1e-4}  # the recorded trial still wins


def test_two_critics_are_compared_paired_by_state_at_each_rate_from_their_experiments_outputs(tmp_path, monkeypatch):
    """Both critics at two rates through `dvc exp run` of a stand-in critic_quality stage whose scores
    (a DVC output, in the cache only) depend on the critic and the rate; the table's comparison reads each
    experiment's own scores back and pairs them by state, as the bootstrap does on the frames themselves."""
    run = dvc_project(tmp_path, monkeypatch)
    rates = {"with_info": 0.5, "no_info": 0.5}
    (tmp_path / "params.yaml").write_text(
        "critics:\n" + "".join(f"  {c}:\n    learning_rate: {lr}\n" for c, lr in rates.items())
    )
    (tmp_path / "measure.py").write_text(
        "import json, pathlib, sys, polars as pl, yaml\n"
        "critic = sys.argv[1]\n"
        "lr = yaml.safe_load(open('params.yaml'))['critics'][critic]['learning_rate']\n"
        "sign = 1 if critic == 'with_info' else -1\n"
        "rows = [(f's{s}', c, c < 2, (c * (s + 1) * lr * 1e4 * sign) % 7, 10 + 3 * c)\n"
        "        for s in range(12) for c in range(4)]\n"
        "out = pathlib.Path(f'data/backend/critic_quality/{critic}')\n"
        "out.mkdir(parents=True, exist_ok=True)\n"
        "pl.DataFrame(rows, schema=['state_id', 'candidate', 'good', 'score', 'n_tokens'], orient='row')"
        ".write_parquet(out / 'scored.parquet')\n"
        "m = pathlib.Path(f'reports/{critic}.json')\n"
        "m.parent.mkdir(exist_ok=True)\n"
        "m.write_text(json.dumps({'good_vs_bad_accuracy': 0.5, 'states_mixed': 12}))\n"
    )
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  critic_quality:\n    matrix: {domain: [backend], critic: [with_info, no_info]}\n"
        "    cmd: python measure.py ${item.critic}\n    deps: [measure.py]\n    params: [critics]\n"
        "    outs:\n      - data/backend/critic_quality/${item.critic}\n"
        "    metrics:\n      - reports/${item.critic}.json:\n          cache: false\n"
        + "".join(  # stages the table reads metrics of, not run here
            f"  {kind}:\n    matrix: {{domain: [backend], critic: [with_info, no_info]}}\n    cmd: exit 1\n"
            for kind in ("critic", "step_pairs")
        )
    )
    run("git", "add", "-A")
    run("git", "commit", "-qm", "project")
    launch_critics("backend", ["with_info", "no_info"], (1e-4, 1e-3), root=tmp_path, queued=False)
    run("rm", "-rf", "data")  # the workspace's outputs are the last experiment's; the comparison must not read them
    trials = collect_critics("backend", root=tmp_path)
    chosen = {"with_info": trials_at(trials, "with_info", 1e-3), "no_info": trials_at(trials, "no_info", 1e-4)}
    pairs = pair_critics("backend", trials, "with_info", "no_info", chosen, root=tmp_path, resamples=200)
    assert [(p.rate_a, p.rate_b) for p in pairs] == [(1e-4, 1e-4), (1e-3, 1e-3), (1e-3, 1e-4)]

    def frame(critic: str, lr: float) -> pl.DataFrame:
        sign = 1 if critic == "with_info" else -1
        rows = [
            (f"s{s}", c, c < 2, (c * (s + 1) * lr * 1e4 * sign) % 7, 10 + 3 * c) for s in range(12) for c in range(4)
        ]
        return pl.DataFrame(rows, schema=["state_id", "candidate", "good", "score", "n_tokens"], orient="row")

    for pair in pairs:
        a, b = frame("with_info", pair.rate_a), frame("no_info", pair.rate_b)
        everything, matched = accuracy_difference(a, b, 200), accuracy_difference(a, b, 200, length_match=1.5)
        assert pair.accuracy == {k: e.as_dict() for k, e in everything.items()} | {
            "length_matched": {k: e.as_dict() for k, e in matched.items()}
        }
    assert pairs[0].accuracy["a"] != pairs[1].accuracy["a"]  # each rate's own experiment was read
    write_critic_table("backend", trials, chosen, tmp_path / "out", pairs)
    table = (tmp_path / "out/backend-critics.md").read_text()
    assert re.search(r"\| 0\.001 \| 0\.0001 \| .* \| 12 \| .* \| 12 \| \*\*yes\*\* \|", table)
    assert json.loads((tmp_path / "out/backend-critics.json").read_text())["pairs"][2]["rate_b"] == 1e-4


def test_policy_trials_are_read_back_with_where_each_policy_trained(tmp_path, monkeypatch):
    """Two learning rates of one policy through `dvc exp run` of stand-in policy and validate stages, the
    policy's writing its run record as every stage does: each trial read back names the machine, kernels and
    precision it trained on, and keeps them in the table, which a later commit without the experiments reads."""
    import torch  # noqa: F401  (its kernels are part of where a policy trained)

    run = dvc_project(tmp_path, monkeypatch)
    (tmp_path / "params.yaml").write_text(
        "training:\n  precision: bf16\npolicies:\n  rft:\n    learning_rate: 0.001\n    epochs: 1\n"
    )
    (tmp_path / "train.py").write_text(
        "import pathlib, torch, yaml\n"
        "from sweetflow.core.artifacts import machine, write_run_record\n"
        "lr = yaml.safe_load(open('params.yaml'))['policies']['rft']['learning_rate']\n"
        "pathlib.Path('models').mkdir(exist_ok=True)\n"
        "pathlib.Path('models/rft.txt').write_text(str(lr))\n"
        "write_run_record('policy@backend-rft', {'machine': machine()})\n"
    )
    (tmp_path / "validate.py").write_text(
        "import json, pathlib\n"
        "lr = float(pathlib.Path('models/rft.txt').read_text())\n"
        "pathlib.Path('reports').mkdir(exist_ok=True)\n"
        "pathlib.Path('reports/rft.json').write_text(json.dumps({'success_rate': 0.5 - lr, 'tests_passed': 0.6}))\n"
    )
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n"
        "  policy:\n    matrix: {domain: [backend], policy: [rft]}\n    cmd: python train.py\n"
        "    deps: [train.py]\n    params: [policies, training]\n"
        "    outs: [models/rft.txt, reports/runs/policy@backend-rft.json]\n"
        "  validate:\n    matrix: {domain: [backend], policy: [rft]}\n    cmd: python validate.py\n"
        "    deps: [validate.py, models/rft.txt]\n    metrics: [reports/rft.json: {cache: false}]\n"
    )
    run("git", "add", "-A")
    run("git", "commit", "-qm", "project")
    grid = {"grid": "lr-epochs", "root": tmp_path, "queued": False, "learning_rates": (1e-4, 1e-2), "epochs": (1,)}
    names = launch("backend", {"rft": "rft"}, **grid)
    trials = collect("backend", {"rft": "rft"}, root=tmp_path)
    here = machine()
    trained_on = (
        ", ".join(sorted({g["name"] for g in here["gpus"]}))
        if here["gpus"]
        else f"{here['cpu']}, {here['kernels']['aten_kernels']} kernels"
    )
    assert sorted(t.experiment for t in trials) == sorted(names)
    assert {t.ran_on for t in trials} == {f"{trained_on}, bf16"}
    assert choose(trials, HEADLINE, "success_rate")["rft"].config == {"learning_rate": 1e-4, "epochs": 1}
    write_table("backend", trials, choose(trials, HEADLINE, "success_rate"), HEADLINE, tmp_path / "tuning")
    assert f"| 60.0 | 50.0 | **yes** | {trained_on}, bf16 |" in (tmp_path / "tuning/backend.md").read_text()

    (tmp_path / "notes.txt").write_text("another machine\n")
    run("git", "add", "notes.txt")
    run("git", "commit", "-qm", "elsewhere")
    kept = with_recorded(collect("backend", {"rft": "rft"}, root=tmp_path), tmp_path / "tuning/backend.json", Trial)
    assert sorted((t.experiment, t.ran_on) for t in kept) == sorted((t.experiment, t.ran_on) for t in trials)


def trials_at(trials: list[CriticTrial], critic: str, rate: float) -> CriticTrial:
    return next(t for t in trials if t.critic == critic and t.config["learning_rate"] == rate)


def test_the_faithful_grid_refuses_an_mtdpo_budget_other_than_four():
    with pytest.raises(ValueError, match="two epoch counts"):
        configurations("mtdpo", "faithful", (1e-5,), (1, 2, 4))


def test_every_preference_configuration_names_its_whole_nll_term():
    """Trials run one after another in the workspace: a setting that named only nll_coef would inherit the
    span and mean of the trial before it (the default's first faithful tuning did: 0 'dialogue')."""
    grids = configurations("sweet") + configurations("mtdpo", "faithful", (1e-5,), (1, 2))
    grids += configurations("sweet", "faithful", (1e-5,))
    assert all({"nll_coef", "nll_span", "nll_mean"} <= set(c) for c in grids)


def test_the_chosen_critics_are_set_against_each_control_on_every_and_on_length_matched_combinations(monkeypatch):
    """Each chosen critic against shorter-is-better, longer-is-better and the base's log-prob, on its own labelled
    candidates (as critic_quality wrote them): the critic here ranks every state right, the length scorers half."""
    rows = [  # state, candidate, good, the critic's score, tokens, the base's log-prob
        (f"s{s}", c, c == 0, 1.0 - c, [10, 12, 30][c] if s % 2 else [30, 12, 10][c], -float(c))
        for s in range(6)
        for c in range(3)
    ]
    frame = pl.DataFrame(
        rows, schema=["state_id", "candidate", "good", "score", "n_tokens", "base_logprob"], orient="row"
    )
    monkeypatch.setattr("sweetflow.tuning.scored_candidates", lambda domain, trial, root=None: frame)
    chosen = {c: drifted(c, 2e-6, 0.7, 0.01) for c in ("with_info", "no_info")}
    pairs = control_pairs("backend", chosen, resamples=50)
    assert [(p.critic, p.control) for p in pairs] == [
        (c, k) for c in ("no_info", "with_info") for k in ("shorter", "longer", "base_logprob")
    ]
    shorter = next(p for p in pairs if p.control == "shorter")
    assert shorter.accuracy["a"]["value"] == 1.0 and shorter.accuracy["b"]["value"] == 0.5
    assert shorter.accuracy["a_minus_b"]["value"] == 0.5 and "length_matched" in shorter.accuracy
    assert "| `no_info` | 2e-06 | shorter | 50.0 [" in render_controls(pairs)


GRID = (2e-7, 1e-6, 5e-6)


@pytest.mark.parametrize(
    "rates, chosen, edge",
    [
        (GRID, 1e-6, None),  # inside: bracketed
        (GRID, 2e-7, "lower"),
        (GRID, 5e-6, "upper"),
        ((1e-7, *GRID), 2e-7, None),  # the extension below ran and lost: bracketed
        ((1e-7, *GRID), 1e-7, None),  # it ran and won: one extension settles it, disclosed
        ((*GRID, 2.5e-5), 5e-6, None),
        ((1e-7, *GRID), 5e-6, "upper"),  # an extension below says nothing of the upper edge
    ],
)
def test_a_choice_at_the_committed_grids_edge_asks_for_one_extension_past_it(rates, chosen, edge):
    trials = [trial("sweet", lr, 1, 0.5 if lr == chosen else 0.1, 0.5) for lr in rates]
    best = choose(trials, HEADLINE, "success_rate")
    assert best["sweet"].config["learning_rate"] == chosen
    assert at_edge(trials, best, GRID) == ({"sweet": edge} if edge else {})
    assert [t.config["learning_rate"] for t in past(trials, GRID)] == [r for r in rates if r not in GRID]


@given(
    grid=st.lists(st.floats(1e-8, 1e-2), min_size=2, max_size=5, unique=True),
    pick=st.integers(0, 4),
)
def test_a_choice_strictly_inside_its_grid_is_never_at_an_edge(grid, pick):
    grid = sorted(grid)
    assume(grid[-1] / grid[0] >= 1.01)  # rates closer than this are one rate to the rule's comparison
    trials = [trial("sweet", lr, 1, 0.5 if i == pick % len(grid) else 0.1, 0.5) for i, lr in enumerate(grid)]
    best = choose(trials, HEADLINE, "success_rate")
    inside = 0 < pick % len(grid) < len(grid) - 1
    assert (at_edge(trials, best, tuple(grid)) == {}) == inside


def test_tune_table_stops_while_the_choice_sits_at_the_edge_and_discloses_the_extension(tmp_path, monkeypatch, capsys):
    """`tune table --bracket` on a committed table (--resume, no experiment in this clone): exit status 1 while
    SWEET-RL's choice is its grid's lowest rate, 0 once the rate below ran, and its table names that extension."""
    run = dvc_project(tmp_path, monkeypatch)
    shutil.copy(Path(__file__).resolve().parents[2] / "params.yaml", tmp_path / "params.yaml")
    run("git", "add", "-A")
    run("git", "commit", "-qm", "project")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tuning"
    table = ["tune", "table", "--domain", "backend", "--out", str(out), "--resume", "--bracket", *map(str, GRID)]
    trials = [trial("sweet", lr, 1, s, 0.5) for lr, s in zip(GRID, (0.4, 0.3, 0.2), strict=True)]
    write_table("backend", trials, choose(trials, HEADLINE, "success_rate"), HEADLINE, out)
    assert main(table) == 1
    said = capsys.readouterr().out
    assert "`sweet` chose 2e-07, the lower edge of the grid: run the next rate below it once" in said
    assert "the grid does not bracket it" in (out / "backend.md").read_text()

    trials += [trial("sweet", 1e-7, 1, 0.35, 0.5), trial("sweet", 1e-7, 2, 0.1, 0.5)]
    write_table("backend", trials, choose(trials, HEADLINE, "success_rate"), HEADLINE, out)
    assert main(table) == 0
    markdown = (out / "backend.md").read_text()
    assert "Past the committed grid (2e-07, 1e-06, 5e-06), one extension: `sweet` at 1e-07." in markdown
    assert "does not bracket" not in markdown
    assert read_choices(out / "backend.json")[1]["sweet"]["learning_rate"] == 2e-7
    assert main(["tune", "table", "--critics", "--out", str(out), "--bracket", "1e-6", "5e-6"]) == 2
    assert "--bracket: `tune table` of the policies only" in capsys.readouterr().out
    assert main([*table[:-3], "1e-6"]) == 2
    assert "a grid of one rate brackets nothing" in capsys.readouterr().out
