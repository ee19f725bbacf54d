"""A second device on a machine that has only a CPU, so that a CPU-only run of the suite catches a CPU
tensor meeting a model that lives elsewhere, as a GPU would.

Inside `elsewhere()`, a tensor placed on `OTHER` (with `.to(OTHER)`, `device=OTHER`, or as the result of
an op on such tensors) holds its numbers in a CPU tensor and computes on the CPU, but says it is on
`OTHER`, and an op that mixes it with a CPU tensor fails as CUDA fails: "Expected all tensors to be on the
same device" (a 0-dimensional CPU tensor, a scalar, is allowed, and so are CPU indices of `x[index]`, as
CUDA allows them). `OTHER` is `meta`,
the one device besides the CPU that a CPU build of torch can name and guard; no tensor here is a real
meta tensor (those have no numbers). `.cpu()` and `.to("cpu")` bring a tensor back.

    with elsewhere():
        model = moved(tiny_llama())            # its weights on OTHER
        model(input_ids=torch.tensor([[1, 2]]))  # RuntimeError: ... on the same device ...
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

OTHER = torch.device("meta")


class Elsewhere(torch.Tensor):
    """A CPU tensor (`inner`) that says it lives on OTHER."""

    inner: torch.Tensor

    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(
            cls,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            device=OTHER,
            requires_grad=inner.requires_grad,
        )

    def __init__(self, inner: torch.Tensor):
        self.inner = inner

    def __repr__(self) -> str:
        return f"Elsewhere({self.inner!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


def _is_other(device) -> bool:
    return isinstance(device, torch.device | str) and torch.device(device) == OTHER


def _wrap(out):
    return tree_map(lambda x: Elsewhere(x) if type(x) is torch.Tensor else x, out)


_CPU_INDICES = {torch.ops.aten.index.Tensor, torch.ops.aten.index_put.default, torch.ops.aten.index_put_.default}


def _run(func, args, kwargs):
    """An aten op on Elsewhere tensors: refused if a CPU tensor (not a scalar) takes part, else run on the
    CPU tensors inside, its results on OTHER unless it moves them to another device."""
    mixed = []
    # Indexing takes its indices from the CPU too (`x[rows]` with a list), as on CUDA; index_select does not.
    checked = (args[:1], args[2:], kwargs) if func in _CPU_INDICES else (args, kwargs)
    tree_map(lambda x: mixed.append(x) if type(x) is torch.Tensor and x.dim() > 0 else None, checked)
    if mixed:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, {OTHER} and "
            f"{mixed[0].device}! ({func})"
        )
    target = kwargs.get("device")
    if _is_other(target):
        kwargs = {**kwargs, "device": torch.device("cpu")}
    out = func(*tree_map(lambda x: x.inner if isinstance(x, Elsewhere) else x, args), **kwargs)
    return out if target is not None and not _is_other(target) else _wrap(out)


class _Placing(TorchFunctionMode):
    """Factories and moves asked for OTHER make Elsewhere tensors; reading numbers out reads the CPU tensor."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.Tensor.tolist, torch.Tensor.numpy) and isinstance(args[0], Elsewhere):
            return func(args[0].inner, *args[1:], **kwargs)
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and isinstance(args[0], Elsewhere):
            # A list in an index becomes a tensor on the indexed tensor's device, which for OTHER would be a
            # real meta tensor without numbers; CUDA's indexing reads it from the CPU, as here.
            index = args[1] if isinstance(args[1], tuple) else (args[1],)
            index = tuple(torch.tensor(i) if isinstance(i, list) else i for i in index)
            args = (args[0], index if isinstance(args[1], tuple) else index[0], *args[2:])
        if func is torch.Tensor.to and type(args[0]) is torch.Tensor:
            rest = [a for a in args[1:] if not _is_other(a)]
            if len(rest) < len(args) - 1 or _is_other(kwargs.get("device")):
                return Elsewhere(args[0].to(*rest, **{k: v for k, v in kwargs.items() if k != "device"}))
        if _is_other(kwargs.get("device")) and not any(isinstance(a, Elsewhere) for a in args):
            return _wrap(func(*args, **{**kwargs, "device": "cpu"}))
        return func(*args, **kwargs)


class _Making(TorchDispatchMode):
    """Tensors that torch's own composite ops make on OTHER (an attention mask on the query's device) are
    Elsewhere tensors too."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(issubclass(t, Elsewhere) for t in types):
            return NotImplemented  # Elsewhere's own dispatch runs it
        if _is_other(kwargs.get("device")):
            return _wrap(func(*args, **{**kwargs, "device": torch.device("cpu")}))
        return func(*args, **kwargs)


@contextmanager
def elsewhere() -> Iterator[torch.device]:
    """The block in which OTHER is a device; yields it."""
    with _Making(), _Placing():
        yield OTHER


def moved(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with every weight and buffer on OTHER (in place)."""
    for module in model.modules():
        for name, weight in module._parameters.items():
            if weight is not None:
                module._parameters[name] = torch.nn.Parameter(Elsewhere(weight.data), weight.requires_grad)
        for name, buffer in module._buffers.items():
            if buffer is not None:
                module._buffers[name] = Elsewhere(buffer)
    return model


def plain(tensor: torch.Tensor) -> torch.Tensor:
    """The CPU tensor of what may be an Elsewhere tensor."""
    return tensor.inner if isinstance(tensor, Elsewhere) else tensor


@pytest.fixture(params=["cpu", "other", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request) -> Iterator[torch.device]:
    """Each device a model of the test may live on: the CPU, OTHER (above) and, where one is visible, the GPU
    (`make test-gpu`). Place the test's model with `place`."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device visible")
    if request.param == "other":
        with elsewhere() as other:
            yield other
    else:
        yield torch.device(request.param)


def place(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """`model` on `device` (the `device` fixture's)."""
    return moved(model) if device == OTHER else model.to(device)
