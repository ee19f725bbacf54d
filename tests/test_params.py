"""params.yaml validation: defaults, descriptions, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.cli import main
from sweetflow.params import Params, ParamsError, describe_params, load_params
from tests.conftest import ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(text)
    return path


def test_project_params_are_valid():
    params = load_params(ROOT / "params.yaml")
    assert params.backend.tasks.source == "procedural" and params.train_domains == ["backend"]


def test_every_knob_has_a_description():
    rows = describe_params(Params())
    assert rows and all(description for _, _, description in rows)


def test_misspelled_key_is_named(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_params(write(tmp_path, "backend:\n  tasks:\n    n_trian: 5\n"))
    assert "backend.tasks.n_trian: unknown key (value 5)" in str(err.value)
    assert "params.yaml" in str(err.value)


def test_ill_typed_value_names_key_value_and_expectation(tmp_path):
    with pytest.raises(ParamsError) as err:
        load_params(write(tmp_path, "backend:\n  scoring:\n    call_timeout_s: soon\n"))
    message = str(err.value)
    assert "backend.scoring.call_timeout_s" in message and "'soon'" in message and "number" in message


def test_unknown_section_is_refused(tmp_path):
    with pytest.raises(ParamsError, match="trainng: unknown key"):
        load_params(write(tmp_path, "trainng:\n  lr: 1\n"))


def test_colbench_source_needs_its_file(tmp_path):
    with pytest.raises(ParamsError, match="colbench_test"):
        load_params(write(tmp_path, "backend:\n  tasks:\n    source: colbench\n"))


@given(st.integers(min_value=10_001, max_value=10**9))
def test_capacity_bounds_are_enforced(n):
    with pytest.raises(ValueError):
        Params.model_validate({"backend": {"tasks": {"n_train": n}}})


def test_cli_prints_effective_params_with_descriptions(tmp_path, capsys):
    path = write(tmp_path, "backend:\n  tasks:\n    n_test: 7\n")
    assert main(["params", "--file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "backend.tasks.n_test" in out and "7" in out and "Test tasks to generate" in out


def test_cli_reports_bad_params_without_a_traceback(tmp_path, capsys):
    path = write(tmp_path, "backend:\n  tasks:\n    seeed: 1\n")
    assert main(["params", "--file", str(path)]) == 2
    assert "backend.tasks.seeed: unknown key" in capsys.readouterr().out


def test_a_trained_domain_needs_training_tasks(tmp_path):
    with pytest.raises(ParamsError, match="train_domains has 'frontend', whose tasks.n_train is 0"):
        load_params(write(tmp_path, "train_domains: [backend, frontend]\n"))
    params = load_params(write(tmp_path, "train_domains: [frontend]\nfrontend:\n  tasks:\n    n_train: 20\n"))
    assert params.train_domains == ["frontend"]
