"""The registry of the policy-training methods: the folders of sweetflow/rl/methods, one per method,
named as the method (`policies.<name>.method`). Its `params.py` holds its knobs (`Params`, a subclass
of sweetflow.core.params.PolicyParams; torch-free) and its `training.py` what it trains on
(`training_data(p, source)`, the contract of sweetflow.rl.policy_methods). A method is known by its
folder and looked up by its name; nothing registers itself on import.

params.yaml is read with every policy's entry as written (`PolicyEntry`); a process that reads a
policy's method validates the entry whole by that method's class (`resolve`): stage policy, tuning,
`sweetflow params`; so does whatever starts a run, before any stage (`load`). A stage that reads no
policy's method (a critic, an evaluation) runs no method's code, so adding a method reruns none of them.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

from sweetflow.core.params import PARAMS_FILE, PolicyParams, checked, invalid
from sweetflow.params import Params, load_params

PACKAGE = "sweetflow.rl.methods"  # spelled whole: `sweetflow dag` counts every method's modules as run


def known() -> list[str]:
    """Every method, by its folder's name."""
    return sorted(info.name for info in pkgutil.iter_modules(importlib.import_module(PACKAGE).__path__) if info.ispkg)


def params_class(method: str) -> type[PolicyParams]:
    """The class of method `method`'s knobs (a folder of this package)."""
    return importlib.import_module(f"{PACKAGE}.{method}.params").Params


def training(method: str) -> ModuleType:
    """The module whose `training_data(p, source)` gives method `method`'s training."""
    return importlib.import_module(f"{PACKAGE}.{method}.training")


def resolve(params: Params, path: Path | str = PARAMS_FILE) -> Params:
    """`params` with every policy's entry validated by its method's class; a ParamsError naming `path`
    and each bad key (`policies.<name>.<key>`) otherwise."""
    policies, problems, methods = {}, [], known()
    for name, entry in params.policies.items():
        if entry.method not in methods:
            known_ones = ", ".join(repr(m) for m in methods)
            problems.append(f"policies.{name}.method: unknown method {entry.method!r}; known methods: {known_ones}")
            continue
        policies[name], found = checked(params_class(entry.method), entry.model_dump(mode="json"), ("policies", name))
        problems += found
    if problems:
        raise invalid(path, problems)
    return params.model_copy(update={"policies": policies})


def load(path: Path | str = PARAMS_FILE) -> Params:
    """Params file `path` with every policy read by its method (`resolve`): what a run's start checks."""
    return resolve(load_params(path), path)
