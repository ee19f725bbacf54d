"""Named experiments: a small YAML of the params that differ from params.yaml, run as a DVC experiment.

`configs/experiments/<name>.yaml` holds only the keys an experiment changes, nested as in
params.yaml (`frontend: {tasks: {n_train: 200}}`). Every key must already exist in params.yaml and
the merged file must validate, so an experiment file cannot drift from the parameters silently. A key
that is null in params.yaml (an option that is off, such as `training.lora`) takes a whole mapping.

    sweetflow experiment configs/experiments/frontend.yaml           # dvc exp run -n frontend -S ...
    sweetflow experiment configs/experiments/frontend.yaml --print   # the command, not run
    sweetflow experiment configs/experiments/smollm2.yaml --tuned reports/tuning/backend.json
    sweetflow experiment configs/experiments/smollm2-faithful.yaml --tuned ... --points reports/experiments/X

`--tuned` adds what a tuning on the validation tasks chose (`sweetflow tune table`'s <domain>.json),
so that the choice lives in the table it was made in and nowhere else. `--points` runs it a method and a
training seed at a time, each finished point written into a record git keeps (sweetflow/points.py).

DVC then does what it does for any `dvc exp run -S`: it writes the values into params.yaml, reruns
exactly the stages whose params, code or data changed, and records the run as an experiment.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from sweetflow.core.artifacts import machine
from sweetflow.core.errors import InputError
from sweetflow.core.inputs import read_yaml
from sweetflow.core.params import PARAMS_FILE, TransformersAgentParams, validated
from sweetflow.params import Params, load_params
from sweetflow.rl.methods import registry
from sweetflow.tuning import params_key, read_choices


def read_overlay(path: Path | str, base: Path | str = PARAMS_FILE) -> dict[str, object]:
    """The experiment's changes as {dotted key: value}, leaves only (a list is a leaf); checked
    against `base`: each key exists there, and the merged parameters validate."""
    return _checked(Path(path), base)[0]


def experiment_params(path: Path | str, base: Path | str = PARAMS_FILE) -> Params:
    """The parameters the experiment runs with: `base` with its changes."""
    return _checked(Path(path), base)[1]


def _checked(path: Path, base: Path | str) -> tuple[dict[str, object], Params]:
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
    where = f"{path} on {base}"
    # Resolved here, before any stage runs: a method's own knob is otherwise checked only by stage policy.
    return changes, registry.resolve(validated(Params, merged, where), where)


def _leaves(tree: dict, base: object, prefix: str = ""):
    """(dotted key, value) of each leaf of `tree`; a mapping is a leaf where `base` has no mapping."""
    for key, value in tree.items():
        dotted, under = f"{prefix}{key}", base.get(key) if isinstance(base, dict) else None
        if isinstance(value, dict) and value and isinstance(under, dict):
            yield from _leaves(value, under, dotted + ".")
        else:
            yield dotted, value


def parse_sets(sets: list[str]) -> dict[str, object]:
    """`KEY=VALUE` strings (a value in YAML, as `dvc exp run -S` reads it) as {KEY: value}."""
    changes = {}
    for item in sets:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise InputError(f"--set {item!r}: expected KEY=VALUE, e.g. seeds=[0]")
        changes[key] = yaml.safe_load(value)
    return changes


def set_arguments(changes: dict[str, object]) -> list[str]:
    """`dvc exp run` arguments that set each value: `-S key=value`, the value in YAML's flow style."""
    args = []
    for key, value in changes.items():
        text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
        args += ["-S", f"{key}={text.removesuffix('...').strip()}"]
    return args


def tuned_changes(
    table: Path | str, base: Path | str = PARAMS_FILE, experiment: Path | str | None = None
) -> dict[str, object]:
    """The params.yaml keys and values of each configuration that tuning table chose: for a table of
    critics, `critics.<critic>.<key>`; for one of policies, `policies.<policy>.<key>` (or the dotted key a
    configuration names, such as `step_pairs.rule`), for the policies of `base` with the experiment file
    `experiment`'s changes. A policy the table has not tuned takes the choice of the one tuned policy of
    its method: SWEET-RL's ablation takes SWEET-RL's, so that the two differ only in their critic."""
    section, chosen = read_choices(table)
    params = experiment_params(experiment, base) if experiment else load_params(base)
    named = getattr(params, section)
    unknown = sorted(set(chosen) - set(named))
    if unknown:
        what = {"policies": "policy", "critics": "critic"}[section]
        raise InputError(f"{table}: chosen: {unknown}: no such {what} in {experiment or base}")
    if section == "critics":
        return {f"critics.{name}.{key}": value for name, config in chosen.items() for key, value in config.items()}
    configs = dict(chosen)
    for name, policy in named.items():
        if name in chosen:
            continue
        same = [p for p in chosen if named[p].method == policy.method]
        if len(same) > 1:
            raise InputError(f"{table}: policies.{name} is untuned and its method {policy.method!r} has {same} tuned")
        if same:
            configs[name] = chosen[same[0]]
    return {params_key(name, key): value for name, config in configs.items() for key, value in config.items()}


def run_command(
    path: Path | str,
    extra: list[str] = (),
    base: Path | str = PARAMS_FILE,
    tuned: list[Path | str] = (),
    name: str | None = None,
    sets: dict[str, object] | None = None,
) -> list[str]:
    """`dvc exp run -n <name> -S ...` for the experiment file (named after it unless `name` is given) and the
    choices of each `tuned` table (they win over the file's: the critics', then the policies'), then `sets` (which
    win over both, e.g. {"seeds": [1]}), then `extra` arguments (e.g. --queue, --temp, or stage targets)."""
    changes = read_overlay(path, base)
    for table in tuned:
        changes |= tuned_changes(table, base, path)
    changes |= sets or {}
    return ["dvc", "exp", "run", "-n", name or Path(path).stem, *set_arguments(changes), *extra]


# CPU flags of native bf16 arithmetic; without them torch emulates bf16 through fp32.
NATIVE_BF16 = ("avx512_bf16", "amx_bf16")


def emulated_bf16(params: Params, flags: set[str] | None = None) -> str | None:
    """A warning when `params` train (`training.precision`) or generate (a transformers agent's `dtype`) in
    bf16 and this CPU (`flags`, default the vector instructions that run records name, `machine()`) has no
    bf16 instructions: there torch emulates bf16 through fp32, slower than fp32 rather than faster, and how
    much slower depends on AVX-512 (docs/real-model.md). None where the model runs on a GPU (`device` cuda, or
    auto with one visible) or the flags can't be read."""
    uses = ["training.precision"] if params.training.precision == "bf16" else []
    uses += [
        f"{where}.dtype"
        for where, agent in params.generators().items()
        if isinstance(agent, TransformersAgentParams) and agent.dtype == "bfloat16"
    ]
    if not uses or params.device not in ("auto", "cpu"):
        return None
    if flags is None:
        flags = set(machine()["vector_instructions"])  # what the run records name; none where unreadable
    if not flags or any(f in flags for f in NATIVE_BF16):
        return None
    if params.device == "auto":
        import torch  # only here: the CLI's other paths need none

        if torch.cuda.is_available():  # the models go to the GPU
            return None
    slower = (
        "a SmolLM2 training step about 2x slower than in fp32, generation about 1.15x (AVX-512 without BF16)"
        if "avx512f" in flags
        else "tens of times slower than fp32 (AVX2 without AVX-512: a SmolLM2 training step ~20x, a matmul ~75x)"
    )
    return (
        f"bf16 in {', '.join(uses)}, but this CPU has no bf16 instructions (avx512_bf16, amx_bf16): torch "
        f"converts through fp32, {slower}; fp32 and float32 run faster here (docs/real-model.md)"
    )
