"""params.yaml and its models: every value in params.yaml, every knob described, and errors that
name the key (or the file and line, for a file that is not YAML)."""

from __future__ import annotations

import copy
import importlib
import re
import subprocess
import sys
import time
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from sweetflow.backend.params import ScoringRules
from sweetflow.cli import main
from sweetflow.core.errors import InputError
from sweetflow.core.params import (
    MAX_PROBLEMS,
    ParamsError,
    describe_params,
    read_params,
)
from sweetflow.frontend.params import FrontendParams
from sweetflow.params import Params, load_params
from sweetflow.rl.methods import registry
from tests.support.params import params_with
from tests.support.project import ROOT, merge

PROJECT = yaml.safe_load((ROOT / "params.yaml").read_text())


def write(tmp_path: Path, changes: dict | None = None, text: str | None = None) -> Path:
    """A params.yaml: the project's with `changes` merged in, or exactly `text`."""
    path = tmp_path / "params.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(merge(copy.deepcopy(PROJECT), changes or {})))
    return path


def leaves(tree: dict, prefix: str = "") -> list[str]:
    keys = []
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            keys += leaves(value, f"{prefix}{key}.")
        else:
            keys.append(prefix + key)
    return keys


def test_params_yaml_holds_every_value_the_models_know():
    """The models hold no values: what they validate from params.yaml is exactly params.yaml."""
    assert load_params(ROOT / "params.yaml").model_dump(mode="json") == PROJECT


def test_no_knob_has_a_default_in_the_models():
    def models(annotation) -> list[type]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in typing.get_args(annotation) for m in models(arg)]

    def defaults(model: type[BaseModel]) -> list[str]:
        found = [f"{model.__name__}.{name}" for name, field in model.model_fields.items() if not field.is_required()]
        return found + [
            d for field in model.model_fields.values() for m in models(field.annotation) for d in defaults(m)
        ]

    # Each method's class is its folder's (sweetflow.rl.methods): the annotation names only their base.
    assert defaults(Params) + [d for m in map(registry.params_class, registry.known()) for d in defaults(m)] == []


@pytest.mark.parametrize(
    "key",
    [
        "backend.scoring.memory_mb",
        "training.threads",
        "critics.with_info.beta",
        "agents.base.top_p",
        "evaluate.policy.max_new_tokens",
        "frontend.scoring.render.chromium",
    ],
)
def test_a_value_removed_from_params_yaml_is_named(tmp_path, key):
    raw = copy.deepcopy(PROJECT)
    *path, last = key.split(".")
    node = raw
    for part in path:
        node = node[part]
    del node[last]
    with pytest.raises(ParamsError, match=rf"{key}: missing"):
        load_params(write(tmp_path, text=yaml.safe_dump(raw)))


def test_every_knob_has_a_description():
    rows = describe_params(load_params(ROOT / "params.yaml"))
    assert len(rows) > 150 and all(description for _, _, description in rows)
    described = {key for key, _, _ in rows}
    # `sweetflow params` lists every value of params.yaml (a mapping such as min_reward as one knob)
    assert all(any(leaf == key or leaf.startswith(key + ".") for key in described) for leaf in leaves(PROJECT))


def test_a_policy_is_read_by_its_methods_class_and_its_errors_name_the_key(tmp_path):
    params = registry.resolve(load_params(ROOT / "params.yaml"))
    assert {name: type(p).__module__ for name, p in params.policies.items()} == {
        "rft": "sweetflow.rl.methods.rft.params",
        "mtdpo": "sweetflow.rl.methods.mtdpo.params",
        "sweet": "sweetflow.rl.methods.sweet.params",
        "sweet_no_info": "sweetflow.rl.methods.sweet.params",
    }
    bad = {"rft": {"critic": "with_info"}, "sweet": {"critic": None}, "mtdpo": {"method": "ppo"}}
    path = write(tmp_path, {"policies": bad})
    with pytest.raises(ParamsError) as error:
        registry.resolve(load_params(path), path)
    message = str(error.value)
    assert message.startswith(f"{path}: invalid parameters:")
    assert "policies.rft: Value error, method 'rft' uses no critic; set `critic: null`" in message
    assert "policies.sweet: Value error, method 'sweet' needs `critic`" in message
    assert "policies.mtdpo.method: unknown method 'ppo'; known methods: 'mtdpo', 'rft', 'sweet'" in message


def test_a_process_that_reads_no_method_runs_no_methods_code(tmp_path):
    """Stages that read no policy's method (a critic, an evaluation) validate the knobs every method
    spells and keep the rest as written: adding a method changes none of their code."""
    script = (
        "import sys; from sweetflow.params import load_params; "
        f"p = load_params({str(write(tmp_path, {'policies': {'rft': {'extra_knob': 7}}}))!r}); "
        "print(p.policies['rft'].model_dump()['extra_knob'], any(m.startswith('sweetflow.rl') for m in sys.modules))"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert shown == "7 False\n"
    with pytest.raises(ParamsError, match=r"policies.rft.learning_rate: Input should be"):
        load_params(write(tmp_path, {"policies": {"rft": {"learning_rate": "fast"}}}))


def test_a_method_folder_reads_its_entries_with_its_own_knobs(tmp_path, monkeypatch):
    """The registry is the package's folders: one more (here beside the package, on its path) is one more method."""
    folder = tmp_path / "methods" / "short"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "params.py").write_text(
        "from typing import Literal\n"
        "from sweetflow.core.params import PolicyParams\n"
        "class Params(PolicyParams):\n"
        "    method: Literal['short']\n"
        "    max_turns: int\n"
    )
    package = importlib.import_module("sweetflow.rl.methods")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder.parent)])
    assert "short" in registry.known()

    entry = {**PROJECT["policies"]["rft"], "method": "short", "max_turns": 2}
    params = registry.resolve(load_params(write(tmp_path, {"policies": {"short": entry}})))
    assert type(params.policies["short"]).__module__ == "sweetflow.rl.methods.short.params"
    assert params.model_dump(mode="json")["policies"]["short"] == entry  # its own knob too
    path = write(tmp_path, {"policies": {"short": {k: v for k, v in entry.items() if k != "max_turns"}}})
    with pytest.raises(ParamsError, match=r"policies.short.max_turns: missing"):
        registry.resolve(load_params(path), path)


def test_misspelled_key_is_named(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_params(write(tmp_path, {"backend": {"tasks": {"n_trian": 5}}}))
    assert "backend.tasks.n_trian: unknown key (value 5)" in str(err.value)
    assert "params.yaml" in str(err.value)


def test_ill_typed_value_names_key_value_and_expectation(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_params(write(tmp_path, {"backend": {"scoring": {"call_timeout_s": "soon"}}}))
    message = str(err.value)
    assert "backend.scoring.call_timeout_s" in message and "'soon'" in message and "number" in message


def test_one_domains_section_is_read_alone_and_its_errors_name_the_whole_key(tmp_path):
    """What reads only a domain's section (the design check reads the renderer) reads what load_params does."""
    assert read_params(FrontendParams, write(tmp_path), section="frontend") == load_params(write(tmp_path)).frontend
    with pytest.raises(ParamsError, match=r"frontend.scoring.render.timeout_s: Input should be"):
        read_params(
            FrontendParams, write(tmp_path, {"frontend": {"scoring": {"render": {"timeout_s": "x"}}}}), "frontend"
        )
    with pytest.raises(ParamsError, match="params.yaml: no section 'frontend'"):
        read_params(FrontendParams, write(tmp_path, text="backend: {}\n"), section="frontend")


def test_a_knob_of_another_agent_backend_is_refused(tmp_path):
    with pytest.raises(ParamsError, match=r"agents.expert.batch_size: unknown key"):
        load_params(write(tmp_path, {"agents": {"expert": {"batch_size": 8}}}))


def test_unknown_section_is_refused(tmp_path):
    with pytest.raises(ParamsError, match="trainng: unknown key"):
        load_params(write(tmp_path, {"trainng": {"lr": 1}}))


def test_colbench_source_needs_its_file(tmp_path):
    with pytest.raises(ParamsError, match="colbench_test"):
        load_params(write(tmp_path, {"backend": {"tasks": {"source": "colbench"}}}))


@pytest.mark.parametrize("domain", ["backend", "frontend"])
def test_a_test_seed_needs_procedural_tasks(tmp_path, domain):
    tasks = {"source": "colbench", "colbench_test": "data/sources/y.jsonl", "test_seed": 1}
    with pytest.raises(ParamsError, match=f"{domain}.tasks.*test_seed draws procedural test tasks"):
        load_params(write(tmp_path, {domain: {"tasks": tasks}}))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=10_001, max_value=10**9))
def test_capacity_bounds_are_enforced(tmp_path, n):
    with pytest.raises(ParamsError, match="backend.tasks.n_train"):
        load_params(write(tmp_path, {"backend": {"tasks": {"n_train": n}}}))


def test_a_trained_domain_needs_training_tasks(tmp_path):
    with pytest.raises(ParamsError, match="train_domains has 'frontend', whose tasks.n_train is 0"):
        load_params(write(tmp_path, {"train_domains": ["backend", "frontend"]}))
    with pytest.raises(ParamsError, match="train_domains has 'frontend', whose tasks.n_val is 0"):
        load_params(write(tmp_path, {"train_domains": ["frontend"], "frontend": {"tasks": {"n_train": 20}}}))
    params = load_params(
        write(tmp_path, {"train_domains": ["frontend"], "frontend": {"tasks": {"n_train": 20, "n_val": 5}}})
    )
    assert params.train_domains == ["frontend"]


def test_cli_prints_effective_params_with_descriptions(tmp_path, capsys):
    path = write(tmp_path, {"backend": {"tasks": {"n_test": 7}}})
    assert main(["params", "--file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "backend.tasks.n_test" in out and "7" in out and "Test tasks to generate" in out


def test_the_cli_check_reads_every_policy_by_its_method_before_any_stage_runs(tmp_path, capsys):
    """A method's name, and its own knobs, pass every stage's reading; `--check` finds a bad one at once."""
    bad = write(tmp_path, {"policies": {"mtdpo": {"method": "dpo"}}})
    load_params(bad)  # what a stage reads: the knobs every method spells
    for command in (["params", "--check", "--file"], ["tune", "run", "--domain", "backend", "--params"]):
        assert main([*command, str(bad)]) == 2
        assert "policies.mtdpo.method: unknown method 'dpo'; known methods:" in capsys.readouterr().out
    good = write(tmp_path)
    assert main(["params", "--check", "--file", str(good)]) == 0
    assert capsys.readouterr().out.strip().endswith("valid; each of its 4 policies checked by its method")


def test_cli_reports_bad_params_without_a_traceback(tmp_path, capsys):
    path = write(tmp_path, {"backend": {"tasks": {"seeed": 1}}})
    assert main(["params", "--file", str(path)]) == 2
    assert "backend.tasks.seeed: unknown key" in capsys.readouterr().out


# --- files that are not what YAML or the models expect: named, bounded, no traceback ----------------

BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9 if prev else ['x'] * 9)}]\n"
    for prev, name in zip([None, "a", "b", "c", "d", "e", "f"], "abcdefg")
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seeds: [1, 2\ntraining: 3\n", r"params.yaml: line 2, column 9: not valid YAML"),
        (BOMB + "seeds: *g\n", r"holds more than 100,000 values"),
        ("seeds: [" + "9" * 5000 + "]\n", r"a value cannot be read: Exceeds the limit"),
        ("seeds: " + "[" * 5000 + "]" * 5000 + "\n", r"nested too deeply"),
        ("- a\n- b\n", r"expected a mapping of sections, got list"),
    ],
    ids=["malformed", "alias bomb", "huge int", "deep", "not a mapping"],
)
def test_a_file_that_is_not_params_is_named_at_once(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        load_params(write(tmp_path, text=text))


def test_invalid_utf8_is_named_with_its_line(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_bytes(b"seeds: [0]\ntraining: \xff\n")
    with pytest.raises(InputError, match=r"params.yaml: line 2: not valid UTF-8"):
        load_params(path)


def test_a_huge_offending_value_is_shown_short(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_params(write(tmp_path, {"backend": {"tasks": {"n_test": list(range(20_000))}}}))
    assert "backend.tasks.n_test" in str(err.value) and len(str(err.value)) < 2_000


def test_thousands_of_bad_values_are_named_by_the_first_few(tmp_path):
    text = (ROOT / "params.yaml").read_text().replace("\nseeds: [0, 1, 2]\n", "\nseeds: [" + "a, " * 20_000 + "a]\n")
    started = time.process_time()
    with pytest.raises(ParamsError) as err:
        load_params(write(tmp_path, text=text))
    lines = str(err.value).splitlines()
    assert lines[1].startswith("  seeds.0: Input should be a valid integer") and lines[-1] == "  ... and 19,981 more"
    assert len(lines) == 2 + MAX_PROBLEMS and time.process_time() - started < 10  # before: 20,000 lines


def test_the_cli_prints_each_problem_on_one_line_whatever_the_width(tmp_path, capsys):
    deep = tmp_path / ("a_directory_with_a_long_name_" * 3)
    deep.mkdir()
    assert main(["params", "--file", str(write(deep, text="seeds: [1, 2\ntraining: 3\n"))]) == 2
    problem = "line 2, column 9: not valid YAML: expected ',' or ']', but got ':'"
    assert capsys.readouterr().out == f"error: {deep}/params.yaml: {problem}\n"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=12).filter(lambda k: k not in PROJECT) | st.sampled_from(["[/x]", "[bold]", "[/]"]))
def test_the_cli_prints_any_unknown_key_as_text(tmp_path, capsys, key):
    """A key such as "[/x]" is rich markup: printed as markup, it raised instead of naming the key."""
    assert main(["params", "--file", str(write(tmp_path, {key: 1}))]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"error: {tmp_path}/params.yaml: invalid parameters:\n") and "unknown key (value 1)" in out


@pytest.mark.parametrize(
    "source, answer_filter, namespace, expected",
    [
        ("procedural", "auto", "auto", ScoringRules(False, False)),
        ("colbench", "auto", "auto", ScoringRules(True, True)),
        ("colbench", "never", "module", ScoringRules(False, False)),
        ("procedural", "always", "function", ScoringRules(True, True)),
        ("procedural", "auto", "function", ScoringRules(False, True)),
    ],
)
def test_auto_scoring_rules_follow_colbench_only_for_its_tasks(source, answer_filter, namespace, expected):
    changes = {
        "tasks": {"source": source, "colbench_train": "data/sources/x.jsonl", "colbench_test": "data/sources/y.jsonl"},
        "scoring": {"answer_filter": answer_filter, "namespace": namespace},
    }
    assert params_with({"backend": changes}).backend.scoring_rules() == expected


def _literal_choices(model: type[BaseModel]) -> set:
    choices = set()
    for field in model.model_fields.values():
        stack = [field.annotation]
        while stack:
            t = stack.pop()
            if typing.get_origin(t) is typing.Literal:
                choices |= set(typing.get_args(t))
            stack += list(typing.get_args(t))
            if isinstance(t, type) and issubclass(t, BaseModel):
                choices |= _literal_choices(t)
    return choices


def test_no_choice_reads_as_a_boolean_or_null_in_yaml_1_1():
    """DVC writes params.yaml back with YAML 1.2 (`dvc exp run -S`), unquoting strings such as 'no'."""
    choices = _literal_choices(Params)
    assert "fp32" in choices and "auto" in choices
    assert [c for c in choices if yaml.safe_load(str(c)) != c] == []


def test_params_survive_dvcs_round_trip_of_params_yaml(tmp_path):
    from ruamel.yaml import YAML

    loader = YAML()  # what DVC uses to apply `-S key=value`
    data = loader.load((ROOT / "params.yaml").read_text())
    data["policies"]["sweet"]["epochs"] = 3
    with (tmp_path / "params.yaml").open("w") as fh:
        loader.dump(data, fh)
    changed = load_params(tmp_path / "params.yaml")
    assert changed.policies["sweet"].epochs == 3
    assert changed.model_dump(exclude={"policies"}) == load_params(ROOT / "params.yaml").model_dump(
        exclude={"policies"}
    )


IMPORT = {"source": "import", "import_file": "data/offline/t.jsonl", "import_reward": "sandbox"}


@pytest.mark.parametrize(
    "changes, problem",
    [
        ({"rollout": {**IMPORT, "import_file": None}}, "source 'import' needs import_file"),
        ({"rollout": {"import_file": "data/offline/t.jsonl"}}, "import_file is read only with source 'import'"),
        (
            {"rollout": {**IMPORT, "import_file": "/data/t.jsonl"}},
            "import_file: Value error, must lie under data/offline/",
        ),
        (
            {"rollout": {**IMPORT, "import_file": "data/offline/../t.jsonl"}},
            "import_file: Value error, must lie under data/offline/",
        ),
        (
            {"rollout": {**IMPORT, "import_file": "data/offline"}},
            "import_file: Value error, must lie under data/offline/",
        ),
        (
            {
                "rollout": IMPORT,
                "train_domains": ["backend", "frontend"],
                "frontend": {"tasks": {"n_train": 4, "n_val": 2}},
            },
            "rollout.source 'import' reads backend trajectories; train_domains has 'frontend'",
        ),
        (
            {"rollout": IMPORT, "backend": {"tasks": {"source": "colbench", "colbench_test": "data/sources/y.jsonl"}}},
            "backend.tasks.colbench_train is null",
        ),
    ],
)
def test_an_import_names_what_it_lacks(tmp_path, changes, problem):
    with pytest.raises(ParamsError, match=re.escape(problem)):
        load_params(write(tmp_path, changes))


def test_an_import_of_a_file_under_data_offline_is_valid():
    changes = {
        "tasks": {
            "source": "colbench",
            "colbench_train": "data/sources/x.jsonl",
            "colbench_test": "data/sources/y.jsonl",
        }
    }
    params = params_with({"rollout": IMPORT, "backend": changes})
    assert params.rollout.source == "import" and params.rollout.import_file == Path("data/offline/t.jsonl")


@pytest.mark.parametrize("domain", ["backend", "frontend"])
def test_either_domains_colbench_source_needs_its_test_file(domain):
    """The ColBench files and their check are written once (ColbenchTasksParams), for both domains."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params[domain]["tasks"].update(source="colbench", colbench_test=None, test_seed=None)
    with pytest.raises(ValidationError, match="source 'colbench' needs colbench_test"):
        Params.model_validate(params)
