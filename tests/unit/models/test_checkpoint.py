"""Where a stage puts its models: params `device` (sweetflow/models/checkpoint.py)."""

from __future__ import annotations

import pytest
import torch

from sweetflow.core.errors import InputError
from sweetflow.models.checkpoint import placement, resolve_device
from sweetflow.params import Params
from tests.support.models import tiny_llama
from tests.support.params import project_params


def test_auto_is_a_visible_gpu_else_the_cpu_and_cpu_is_the_cpu():
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible here")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_a_gpu_named_where_none_is_visible_is_an_input_error(device):
    with pytest.raises(InputError, match=f"device: {device}, but no CUDA GPU is visible"):
        resolve_device(device)


def test_the_params_device_is_auto_by_default_and_refuses_other_names():
    assert project_params().device == "auto"
    raw = project_params().model_dump(mode="json")
    for bad in ("gpu", "cuda0", "mps"):
        with pytest.raises(ValueError, match="device"):
            Params.model_validate({**raw, "device": bad})


def test_placement_is_the_models_device_type_and_dtype():
    assert placement(tiny_llama().to(torch.bfloat16)) == {"device": "cpu", "dtype": "bfloat16"}
