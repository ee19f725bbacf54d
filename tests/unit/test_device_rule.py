"""A review rule held by a test: in a function that meets a model (it takes one, or reads its object's
`.model`), every tensor torch makes from scratch names its device. A tensor made on the CPU beside a
model on a GPU is the defect a CPU-only machine never shows (`*_like` and `.to(...)` take their device
from a tensor, so they pass). tests/unit/rl/test_devices.py runs the code itself on an emulated device."""

from __future__ import annotations

import ast

from tests.support.project import ROOT

FACTORIES = {"tensor", "as_tensor", "arange", "zeros", "ones", "full", "empty", "rand", "randn", "randint", "linspace"}
FACTORIES |= {"Generator"}
MODEL_ARGUMENTS = {"model", "critic", "reference", "base", "policy"}


def violations(source: str) -> list[str]:
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef):
            continue
        takes = {a.arg for a in function.args.args + function.args.kwonlyargs} & MODEL_ARGUMENTS
        reads = any(isinstance(n, ast.Attribute) and n.attr == "model" for n in ast.walk(function))
        if not (takes or reads):
            continue
        for node in ast.walk(function):
            call = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(call, ast.Attribute)
                and isinstance(call.value, ast.Name)
                and call.value.id == "torch"
                and call.attr in FACTORIES
                and not any(k.arg == "device" for k in node.keywords)
                and not (call.attr == "Generator" and node.args)  # torch.Generator(device) names it positionally
            ):
                found.append(f"line {node.lineno}, {function.name}: torch.{call.attr} without a device")
    return found


def test_code_that_meets_a_model_makes_its_tensors_on_a_named_device():
    found = {
        str(path.relative_to(ROOT)): v
        for path in sorted((ROOT / "sweetflow").rglob("*.py")) + sorted((ROOT / "stages").glob("*.py"))
        if (v := violations(path.read_text()))
    }
    assert found == {}


def test_the_rule_sees_a_tensor_made_without_a_device():
    bad = "import torch\ndef score(model, ids):\n    index = torch.arange(len(ids))\n    return model(ids)[index]\n"
    good = bad.replace("torch.arange(len(ids))", "torch.arange(len(ids), device=ids.device)")
    assert violations(bad) == ["line 3, score: torch.arange without a device"] and violations(good) == []
    method = "import torch\nclass A:\n    def embed(self, rows):\n"
    method += "        return self.model(rows) if rows else torch.empty(0)\n"
    assert violations(method) == ["line 4, embed: torch.empty without a device"]
