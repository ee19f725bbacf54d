"""sweetflow refuses a dependency older than the code needs, in one line (sweetflow/core/requirements.py),
and pyproject.toml declares the same minimums."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from sweetflow.core.requirements import MINIMUMS, TooOld, check
from tests.support.project import ROOT


def test_the_installed_versions_pass():
    check()


@pytest.mark.parametrize("found", ["5.17.0", "5.23.9", "4.57.1"])
def test_an_older_transformers_is_refused_naming_the_version_needed(found):
    with pytest.raises(TooOld) as refused:
        check(lambda name: found)
    message = str(refused.value)
    assert "transformers>=5.24" in message and found in message and "\n" not in message


def test_pyproject_declares_each_minimum_the_code_checks():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    declared = {Requirement(d).name: Requirement(d).specifier for d in dependencies}
    for name, (minimum, _) in MINIMUMS.items():
        assert f">={minimum}" in {str(s) for s in declared[name]}, name
        assert Version(importlib.metadata.version(name)) >= Version(minimum)


@pytest.mark.parametrize("module", ["sweetflow.cli", "sweetflow.agents.transformers", "sweetflow.rl.logprobs"])
def test_a_process_with_transformers_5_17_refuses_to_start_in_one_line(tmp_path, module):
    """A distribution's metadata found first on the path is what importlib reports: a 5.17 in front of
    the installed one, as an old CUDA image would have it."""
    info = tmp_path / "transformers-5.17.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: transformers\nVersion: 5.17.0\n")
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "sweetflow needs transformers>=5.24 (it uses generation's cache= argument and a forward pass's "
        "out.cache); 5.17.0 is installed: pip install 'transformers>=5.24'"
    ]
