"""Named experiments: a small YAML of the params that differ from params.yaml, run as a DVC experiment.

`configs/experiments/<name>.yaml` holds only the keys an experiment changes, nested as in
params.yaml (`frontend: {tasks: {n_train: 200}}`). Every key must already exist in params.yaml and
the merged file must validate, so an experiment file cannot drift from the parameters silently. A key
that is null in params.yaml (an option that is off, such as `training.lora`) takes a whole mapping.

    sweetflow experiment configs/experiments/frontend.yaml           # dvc exp run -n frontend -S ...
    sweetflow experiment configs/experiments/frontend.yaml --print   # the command, not run

DVC then does what it does for any `dvc exp run -S`: it writes the values into params.yaml, reruns
exactly the stages whose params, code or data changed, and records the run as an experiment.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from pydantic import ValidationError

from sweetflow.core.errors import InputError
from sweetflow.core.inputs import read_yaml
from sweetflow.core.params import PARAMS_FILE, Params


def read_overlay(path: Path | str, base: Path | str = PARAMS_FILE) -> dict[str, object]:
    """The experiment's changes as {dotted key: value}, leaves only (a list is a leaf); checked
    against `base`: each key exists there, and the merged parameters validate."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such experiment file")
    overlay = read_yaml(path)
    if not isinstance(overlay, dict) or not overlay:
        raise InputError(f"{path}: expected a mapping of the params.yaml keys the experiment changes")
    params = read_yaml(Path(base))
    changes = dict(_leaves(overlay, params))
    merged = copy.deepcopy(params)
    for key, value in changes.items():
        node = merged
        *parents, last = key.split(".")
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                break
        if not isinstance(node, dict) or last not in node:
            raise InputError(f"{path}: {key}: no such key in {base} (an experiment changes values, it adds none)")
        node[last] = value
    try:
        Params.model_validate(merged)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:5])
        raise InputError(f"{path}: the parameters it makes are invalid: {problems}") from None
    return changes


def _leaves(tree: dict, base: object, prefix: str = ""):
    """(dotted key, value) of each leaf of `tree`; a mapping is a leaf where `base` has no mapping."""
    for key, value in tree.items():
        dotted, under = f"{prefix}{key}", base.get(key) if isinstance(base, dict) else None
        if isinstance(value, dict) and value and isinstance(under, dict):
            yield from _leaves(value, under, dotted + ".")
        else:
            yield dotted, value


def set_arguments(changes: dict[str, object]) -> list[str]:
    """`dvc exp run` arguments that set each value: `-S key=value`, the value in YAML's flow style."""
    args = []
    for key, value in changes.items():
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        args += ["-S", f"{key}={text.removesuffix('...').strip()}"]
    return args


def run_command(path: Path | str, extra: list[str] = (), base: Path | str = PARAMS_FILE) -> list[str]:
    """`dvc exp run -n <name> -S ...` for the experiment file (named after it), then `extra` arguments
    (e.g. --queue, --temp, or stage targets)."""
    name = Path(path).stem
    return ["dvc", "exp", "run", "-n", name, *set_arguments(read_overlay(path, base)), *extra]
