"""Named experiment files: checked against params.yaml, turned into `-S` arguments that DVC's own
override parser applies to exactly the merged parameters."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dvc.utils.hydra import apply_overrides
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.cli import main
from sweetflow.core.errors import InputError
from sweetflow.experiments import (
    emulated_bf16,
    experiment_params,
    parse_sets,
    read_overlay,
    run_command,
    set_arguments,
    tuned_changes,
)
from sweetflow.params import Params
from sweetflow.tuning import params_key, read_choices

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ROOT / "params.yaml"
EXPERIMENTS = sorted((ROOT / "configs" / "experiments").glob("*.yaml"))
FOLDERS = sorted(p for p in (ROOT / "reports" / "experiments").iterdir() if p.is_dir())
RECORDS = [p for p in FOLDERS if (p / "params.yaml").is_file()]  # finished: a run's params, lock and results


def test_a_folder_without_a_record_holds_the_progress_of_its_run():
    """A run longer than a session commits each configuration's figures as they come (progress.md),
    before its record exists; any other folder is a record."""
    for folder in FOLDERS:
        assert folder in RECORDS or (folder / "progress.md").is_file(), f"{folder}: neither a record nor progress"


def merged(changes: dict) -> dict:
    data = copy.deepcopy(yaml.safe_load(PARAMS.read_text()))
    for key, value in changes.items():
        node = data
        *parents, last = key.split(".")
        for part in parents:
            node = node[part]
        node[last] = value
    return data


def dvc_applied(tmp_path: Path, changes: dict) -> dict:
    """params.yaml after DVC applies the arguments, as `dvc exp run -S ...` does."""
    target = tmp_path / "params.yaml"
    shutil.copy(PARAMS, target)
    args = set_arguments(changes)
    apply_overrides(target, [value for flag, value in zip(args[::2], args[1::2]) if flag == "-S"])
    return yaml.safe_load(target.read_text())


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_each_committed_experiment_validates_and_dvc_applies_it_exactly(path, tmp_path):
    changes = read_overlay(path, PARAMS)
    assert changes, "an experiment changes something"
    applied = dvc_applied(tmp_path, changes)
    assert as_read(applied) == as_read(merged(changes))  # DVC writes 1e-05 as YAML 1.1 reads a string
    assert Params.model_validate(applied) == Params.model_validate(merged(changes))


def test_the_frontend_experiment_trains_the_frontend():
    changes = read_overlay(ROOT / "configs/experiments/frontend.yaml", PARAMS)
    assert changes["train_domains"] == ["frontend"]
    assert merged(changes)["frontend"]["tasks"]["n_train"] > 0


# Keys added after some records were made, and the value such a record ran with, from its other values.
IMPLIED = {"warmup_learning_rate": lambda section: section["learning_rate"]}  # the warm-up ran at the critic's


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.name)
def test_each_committed_record_was_made_with_its_experiment_file(record):
    """reports/experiments/<name>/ is the record of a run of configs/experiments/<name>.yaml (an
    experiment not run yet has none): its params.yaml holds every value the file sets, and its lock ran
    every trained method's evaluation."""
    path = ROOT / "configs" / "experiments" / f"{record.name}.yaml"
    params = yaml.safe_load((record / "params.yaml").read_text())
    for key, value in read_overlay(path, PARAMS).items():
        node = params
        for part in key.split("."):
            node = node[part] if part in node or part not in IMPLIED else IMPLIED[part](node)
        assert as_read(node) == value, f"{record}/params.yaml: {key} is {node!r}, the experiment sets {value!r}"
    stages = yaml.safe_load((record / "dvc.lock").read_text())["stages"]
    for domain in params["train_domains"]:
        for policy in params["policies"]:
            assert f"evaluate_policy@{domain}-{policy}" in stages
    assert "report" in stages and (record / "results.md").is_file()


@pytest.mark.parametrize("record", [r for r in RECORDS if (r / "tuning").is_dir()], ids=lambda p: p.name)
def test_a_retuned_record_runs_what_its_own_tuning_chose(record):
    """A record with a `tuning/` table (`sweetflow tune table --out`) ran each tuned policy with the
    configuration chosen there on validation, and the ablation with SWEET-RL's."""
    params = yaml.safe_load((record / "params.yaml").read_text())

    def value_of(key: str):
        node = params
        for part in key.split("."):
            node = node[part]
        return as_read(node)

    for table in (record / "tuning").glob("*.json"):
        section, chosen = read_choices(table)
        if section == "critics":
            assert chosen and all(
                value_of(f"critics.{c}.{k}") == v for c, cfg in chosen.items() for k, v in cfg.items()
            )
            continue
        assert {"rft", "mtdpo", "sweet"} <= set(chosen), f"{table}: every trained method is tuned"
        for policy, config in chosen.items():
            for key, value in config.items():
                assert value_of(params_key(policy, key)) == value, f"{record.name}: {params_key(policy, key)}"
        for key in ("learning_rate", "epochs"):
            assert value_of(f"policies.sweet_no_info.{key}") == value_of(f"policies.sweet.{key}")


def test_a_key_params_yaml_lacks_is_refused_with_its_name(tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text("rollout:\n  max_task: 10\n")
    with pytest.raises(InputError, match=r"typo.yaml: rollout.max_task: no such key"):
        read_overlay(bad, PARAMS)


def test_an_option_that_is_off_takes_a_whole_mapping(tmp_path):
    lora = {"r": 8, "alpha": 16, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    on = tmp_path / "lora.yaml"
    on.write_text(yaml.safe_dump({"training": {"lora": lora, "threads": 1}}))
    changes = read_overlay(on, PARAMS)
    assert changes == {"training.lora": lora, "training.threads": 1}  # one value: params.yaml's lora is null
    assert Params.model_validate(dvc_applied(tmp_path, changes)).training.lora.model_dump() == lora
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump({"training": {"lora": {**lora, "rank": 8}}}))
    with pytest.raises(
        InputError, match=r"typo.yaml on .*params.yaml: invalid parameters:\n  training.lora.rank: unknown key"
    ):
        read_overlay(typo, PARAMS)  # the mapping is still checked, key by key


def test_values_the_parameters_refuse_are_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rollout:\n  samples_per_task: -1\n")
    with pytest.raises(InputError, match=r"bad.yaml on .*params.yaml: invalid parameters:\n  rollout.samples_per_task"):
        read_overlay(bad, PARAMS)


def test_each_policy_is_read_by_its_method_before_the_experiment_runs(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("policies:\n  mtdpo:\n    method: dpo\n")
    with pytest.raises(
        InputError, match=r"bad.yaml on .*params.yaml: invalid parameters:\n  policies.mtdpo.method: unknown method"
    ):
        read_overlay(bad, PARAMS)


def test_an_empty_or_missing_file_is_an_error(tmp_path):
    (tmp_path / "empty.yaml").write_text("")
    with pytest.raises(InputError, match="expected a mapping"):
        read_overlay(tmp_path / "empty.yaml", PARAMS)
    with pytest.raises(FileNotFoundError, match="no such experiment file"):
        read_overlay(tmp_path / "absent.yaml", PARAMS)


def test_the_command_is_named_after_the_file():
    command = run_command(ROOT / "configs/experiments/frontend.yaml", ["--queue"], PARAMS)
    assert command[:5] == ["dvc", "exp", "run", "-n", "frontend"] and command[-1] == "--queue"


# Values of the kinds params.yaml holds: numbers, flags, null, names, lists of names, per-domain maps.
names = st.sampled_from(["backend", "frontend", "with_info", "x1"])
values = st.one_of(
    st.integers(-10_000, 10_000),
    st.floats(-1e6, 1e6, allow_nan=False).filter(lambda x: x == 0 or abs(x) > 1e-9),
    st.booleans(),
    st.none(),
    names,
    st.lists(names, max_size=3),
    st.dictionaries(names, st.floats(0, 1), max_size=2),
)


def as_read(value):
    """What the pipeline reads for a value DVC wrote: PyYAML (YAML 1.1) reads an exponent float
    without a dot, as DVC's writer puts 1e-05, as a string; the params' float fields convert it."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return {k: as_read(v) for k, v in value.items()}
    return value


@settings(max_examples=40)
@given(value=values)
def test_dvc_reads_back_any_value_as_it_was_written(tmp_path_factory, value):
    target = tmp_path_factory.mktemp("p") / "params.yaml"
    target.write_text("rollout:\n  seed: 0\n")  # any leaf: DVC's parser does not look at its old type
    (flag, arg) = set_arguments({"rollout.seed": value})
    apply_overrides(target, [arg])
    read = yaml.safe_load(target.read_text())["rollout"]["seed"]
    assert (read if isinstance(value, str) else as_read(read)) == value


def test_the_cli_prints_the_command_from_the_params_file_it_is_given(tmp_path):
    """`--params` is the file the experiment is checked against (here the only one it is valid on),
    and the printed command keeps `[frontend]` (rich would take it for markup)."""
    params = tmp_path / "params.yaml"
    text = PARAMS.read_text()
    assert "    n_train: 0 " in text  # params.yaml's frontend: train_domains [frontend] alone is invalid on it
    assert "    n_val: 0\n" in text
    params.write_text(
        text.replace("    n_train: 0 ", "    n_train: 12 ", 1).replace("    n_val: 0\n", "    n_val: 4\n", 1)
    )
    exp = tmp_path / "only-here.yaml"
    exp.write_text("train_domains: [frontend]\n")
    command = [sys.executable, "-m", "sweetflow.cli", "experiment", str(exp), "--print"]
    refused = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode != 0 and "n_train is 0" in refused.stderr + refused.stdout
    shown = subprocess.run([*command, "--params", str(params)], capture_output=True, text=True, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "dvc exp run -n only-here -S 'train_domains=[frontend]'"


@pytest.mark.parametrize("order", [["--print", "{exp}"], ["{exp}", "--print"]])
def test_what_follows_the_double_dash_goes_to_dvc_wherever_the_options_are(order, tmp_path, capsys):
    exp = tmp_path / "small.yaml"
    exp.write_text("rollout: {max_tasks: 7}\n")
    assert main(["experiment", *(a.format(exp=exp) for a in order), "--", "--queue", "report"]) == 0
    assert capsys.readouterr().out.strip() == "dvc exp run -n small -S rollout.max_tasks=7 --queue report"


@pytest.mark.parametrize(
    ("flags", "slower"),
    [
        ({"avx2", "avx512f"}, "about 2x slower"),
        ({"avx", "avx2", "fma"}, "tens of times slower"),
        ({"avx512f", "avx512_bf16"}, None),
        ({"avx512f", "amx_bf16"}, None),
        (set(), None),
    ],
)
def test_bf16_on_a_cpu_without_bf16_instructions_is_warned_of_by_how_much(flags, slower):
    """An empty set: flags that could not be read. On CPU settings (`device: cpu`), so no visible GPU matters."""
    bf16 = experiment_params(ROOT / "configs/experiments/smollm2.yaml").model_copy(update={"device": "cpu"})
    assert bf16.training.precision == "bf16" and bf16.agents["base"].dtype == "bfloat16"
    warning = emulated_bf16(bf16, flags)
    assert (warning is None) is (slower is None)
    if slower:
        assert slower in warning and "training.precision" in warning and "agents.base.dtype" in warning
    assert emulated_bf16(bf16.model_copy(update={"device": "cuda"}), flags) is None  # runs on the GPU
    assert emulated_bf16(Params.model_validate(yaml.safe_load(PARAMS.read_text())), flags) is None  # fp32


def test_bf16_generation_alone_is_warned_of_by_its_key():
    """Training in fp32 but one generating model in bf16: the warning names that model's key only."""
    raw = yaml.safe_load(PARAMS.read_text())
    raw["evaluate"]["policy"]["dtype"] = "bfloat16"
    params = Params.model_validate(raw).model_copy(update={"device": "cpu"})
    warning = emulated_bf16(params, {"avx2"})
    assert "evaluate.policy.dtype" in warning and "training.precision" not in warning
    assert "agents." not in warning and "candidates." not in warning


def test_the_cli_warns_of_emulated_bf16_as_this_machine_has_it():
    """Whichever CPU runs the suite: the warning on stderr exactly when `emulated_bf16` finds one, and the
    command on stdout either way."""
    exp = ROOT / "configs/experiments/smollm2.yaml"
    shown = subprocess.run(
        [sys.executable, "-m", "sweetflow.cli", "experiment", str(exp), "--print"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert shown.returncode == 0, shown.stderr
    assert ("warning: bf16 in training.precision" in shown.stderr) is (
        emulated_bf16(experiment_params(exp)) is not None
    )
    assert shown.stdout.startswith("dvc exp run -n smollm2 ")


def test_arguments_after_the_double_dash_are_refused_where_nothing_takes_them(capsys):
    with pytest.raises(SystemExit):
        main(["params", "--", "report"])
    assert "for `sweetflow experiment` only" in capsys.readouterr().err


SCALE_RECORDS = [r for r in RECORDS if r.name.startswith("scale-")]


@pytest.mark.parametrize("record", SCALE_RECORDS, ids=lambda p: p.name)
def test_each_data_scale_point_starts_from_the_same_base_policy(record):
    """docs/scaling.md: only the offline data grows, so every point's base policy is the default's: the
    same zero-shot success on the same test tasks and seeds, to the last episode. (Its checkpoint's
    directory hash cannot be compared: the manifest inside names the task table, which grows.)"""

    def zero_shot(point: Path) -> dict:
        rows = json.loads((point / "summary/results.json").read_text())["domains"]["backend"]["rows"]
        return next(row for row in rows if row["method"] == "zero_shot")

    assert zero_shot(record) == zero_shot(ROOT / "reports/experiments/scale-750")


def tuning_table(tmp_path: Path, chosen: dict) -> Path:
    table = tmp_path / "backend.json"
    table.write_text(json.dumps({"trials": [], "chosen": {p: {"config": c} for p, c in chosen.items()}}))
    return table


def test_a_tuning_table_sets_each_tuned_policy_and_the_ablation_takes_sweets(tmp_path):
    table = tuning_table(
        tmp_path,
        {"rft": {"learning_rate": 1e-3, "epochs": 1}, "sweet": {"learning_rate": 2e-5, "epochs": 3, "nll_coef": 0.0}},
    )
    changes = tuned_changes(table, PARAMS)
    assert changes["policies.rft.learning_rate"] == 1e-3
    assert changes["policies.sweet_no_info.epochs"] == changes["policies.sweet.epochs"] == 3
    assert changes["policies.sweet_no_info.nll_coef"] == 0.0
    assert not any(key.startswith("policies.mtdpo.") for key in changes)  # not in the table: as the file has it
    applied = Params.model_validate(dvc_applied(tmp_path, changes)).policies
    assert (applied["sweet_no_info"].learning_rate, applied["sweet_no_info"].critic) == (2e-5, "no_info")
    command = run_command(ROOT / "configs/experiments/smollm2.yaml", [], PARAMS, [table])
    assert "policies.sweet.learning_rate=2.0e-05" in command  # the table's choice reaches dvc exp run


def test_a_critics_table_sets_each_critic_and_a_rule_reaches_the_step_pairs(tmp_path):
    critics = tmp_path / "backend-critics.json"
    critics.write_text(json.dumps({"section": "critics", "chosen": {"with_info": {"config": {"learning_rate": 2e-5}}}}))
    assert tuned_changes(critics, PARAMS) == {"critics.with_info.learning_rate": 2e-5}
    policies = tuning_table(tmp_path, {"sweet": {"learning_rate": 1e-5, "epochs": 1, "step_pairs.rule": "halves"}})
    changes = tuned_changes(policies, PARAMS)
    assert changes["step_pairs.rule"] == "halves" and changes["policies.sweet_no_info.learning_rate"] == 1e-5
    command = run_command(ROOT / "configs/experiments/smollm2.yaml", [], PARAMS, [critics, policies])
    assert "critics.with_info.learning_rate=2.0e-05" in command and "step_pairs.rule=halves" in command
    applied = Params.model_validate(dvc_applied(tmp_path, changes | tuned_changes(critics, PARAMS)))
    assert applied.step_pairs.rule == "halves" and applied.critics["with_info"].learning_rate == 2e-5
    critics.write_text(json.dumps({"section": "critics", "chosen": {"oracle": {"config": {"learning_rate": 1}}}}))
    with pytest.raises(InputError, match=r"chosen: \['oracle'\]: no such critic"):
        tuned_changes(critics, PARAMS)


def test_a_tuning_table_that_names_an_unknown_policy_or_is_ambiguous_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"backend.json: chosen: \['dpo'\]: no such policy"):
        tuned_changes(tuning_table(tmp_path, {"dpo": {"learning_rate": 1e-3, "epochs": 1}}), PARAMS)
    both = {"sweet": {"learning_rate": 1e-3, "epochs": 1}, "sweet_no_info": {"learning_rate": 1e-4, "epochs": 1}}
    assert tuned_changes(tuning_table(tmp_path, both), PARAMS)["policies.sweet_no_info.learning_rate"] == 1e-4
    # Two tuned SWEET-RL policies: which one the untuned ablation should follow is not for us to guess.
    params = yaml.safe_load(PARAMS.read_text())
    params["policies"]["sweet_long"] = params["policies"]["sweet"]
    base = tmp_path / "params.yaml"
    base.write_text(yaml.safe_dump(params))
    two = {"sweet": {"learning_rate": 1e-3, "epochs": 1}, "sweet_long": {"learning_rate": 1e-4, "epochs": 4}}
    with pytest.raises(InputError, match=r"policies.sweet_no_info is untuned and its method 'sweet' has"):
        tuned_changes(tuning_table(tmp_path, two), base)
    # The experiment file's policies decide, not params.yaml's: there the second SWEET-RL policy is RFT.
    params["policies"]["sweet_long"] = dict(params["policies"]["sweet"])  # not a YAML alias of sweet's
    base.write_text(yaml.safe_dump(params))
    experiment = tmp_path / "rft_long.yaml"
    experiment.write_text(yaml.safe_dump({"policies": {"sweet_long": {"method": "rft", "critic": None}}}))
    with pytest.raises(InputError, match=r"policies.sweet_no_info is untuned"):
        tuned_changes(tuning_table(tmp_path, two), base)
    changes = tuned_changes(tuning_table(tmp_path, two), base, experiment)
    assert changes["policies.sweet_no_info.learning_rate"] == 1e-3 and changes["policies.rft.learning_rate"] == 1e-4
    (tmp_path / "backend.json").write_text('{"chosen": [1]}')
    with pytest.raises(InputError, match=r"backend.json: not a tuning table"):
        tuned_changes(tmp_path / "backend.json", PARAMS)


def test_a_set_value_is_read_as_yaml_and_a_malformed_one_is_refused():
    assert parse_sets(["seeds=[0]", "step_pairs.rule=halves"]) == {"seeds": [0], "step_pairs.rule": "halves"}
    assert set_arguments(parse_sets(["seeds=[0, 1]"])) == ["-S", "seeds=[0, 1]"]
    with pytest.raises(InputError, match=r"--set 'seeds': expected KEY=VALUE"):
        parse_sets(["seeds"])
