"""A stage's definition in dvc.yaml, as the code reads it: the params sections it declares, the paths
it depends on and the paths of its output, metrics and plots. dvc.yaml is the one place they are
written; a stage records exactly the sections declared there, writes where its definition says and
finds another stage's output by that stage's definition (`Stage.upstream`), as the report's reading
and tuning do (`output_of`).

DVC's parser (`sweetflow.dag.load_stages`) resolves the whole file and costs a second of imports in
every stage, so one stage's entry is resolved here, with the templating dvc.yaml uses: `${item}` of a
`foreach` over domains, `${item.<key>}` of a `matrix`, and `${a.b}` of a params.yaml value.
tests/unit/test_dag.py holds this resolution to DVC's for every stage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sweetflow.core.errors import InputError
from sweetflow.core.inputs import read_yaml

DVC_YAML = "dvc.yaml"
TEMPLATE = re.compile(r"\$\{\s*([\w.]+)\s*\}")


@dataclass(frozen=True)
class Definition:
    # The params keys the stage declares (`critics.with_info`, `episodes.max_turns`) and the data and
    # code it depends on; None when read without params.yaml's values, which their `${a.b}` may need.
    params: tuple[str, ...] | None
    deps: tuple[str, ...] | None
    outs: tuple[str, ...]
    metrics: str | None  # its metrics file, when it has one
    plots: str | None  # its plots directory, when it has one

    @property
    def out(self) -> str:
        """The stage's data output (dvc.yaml lists it first, before the run record)."""
        return self.outs[0]


def definition(
    kind: str, domain: str | None, item: str | None, values: dict | None = None, root: Path | str = "."
) -> Definition:
    """The resolved entry of stage `kind` for `domain` and `item` (None where the stage has none);
    `values` is params.yaml's data, which `${a.b}` reads; without it, the params and deps are left
    unresolved (None): a reader of outputs alone needs neither."""
    path = Path(root) / DVC_YAML
    data = read_yaml(path)
    stages = data.get("stages", {}) if isinstance(data, dict) else {}
    if kind not in stages:
        raise InputError(f"{path}: no stage {kind!r}")
    entry = stages[kind]
    body = entry.get("do", entry)
    if "matrix" in entry:
        keys = list(entry["matrix"])
        named = [key for key in keys if key != "domain"]
        scope = {"item": {"domain": domain, **dict.fromkeys(named, item)}}
    elif "foreach" in entry:
        scope = {"item": domain}
    else:
        scope = {}

    def resolve(text: str) -> str:
        return TEMPLATE.sub(lambda m: str(_lookup({**(values or {}), **scope}, m.group(1), path)), text)

    def paths(entries: list | None) -> tuple[str, ...]:
        return tuple(resolve(next(iter(e)) if isinstance(e, dict) else e) for e in entries or [])

    def first(entries: list | None) -> str | None:
        return next(iter(paths(entries)), None)

    return Definition(
        params=None if values is None else tuple(resolve(p) for p in body.get("params", [])),
        deps=None if values is None else paths(body.get("deps")),
        outs=paths(body.get("outs")),
        metrics=first(body.get("metrics")),
        plots=first(body.get("plots")),
    )


def output_of(
    kind: str, domain: str | None, item: str | None = None, file: str | None = None, root: Path | str = "."
) -> Path:
    """Where stage `kind` of `domain` and `item` writes its output (or the `file` inside it), as its
    entry says: how code outside a stage (the report's reading, tuning) finds an output by its
    producer's name. Relative to the project, as dvc.yaml writes it."""
    out = Path(definition(kind, domain, item, root=root).out)
    return out / file if file is not None else out


def outputs_of(kind: str, domain: str | None, of: Literal["out", "metrics", "plots"] = "out") -> dict[str, Path]:
    """What every item of stage `kind` for `domain` (a critic, a policy, an agent) left on disk, by
    item, sorted: its entry's output (`of="out"`), metrics file (`"metrics"`) or plots directory
    (`"plots"`), with the item a wildcard; a stage without items has its one, keyed by the name of its
    directory (`reports/backend/zero_shot/metrics.json` by `zero_shot`). What a reader shows is what ran,
    with no params section of its own to name the items."""
    entry = definition(kind, domain, "*")
    pattern = {"out": entry.out, "metrics": entry.metrics, "plots": entry.plots}[of]
    if pattern is None:
        raise InputError(f"{DVC_YAML}: stage {kind!r} declares no {of}")
    parts = Path(pattern).parts
    # The item is the path's wildcard component; a stage without items is keyed by its directory's name.
    at = parts.index("*") if "*" in parts else len(parts) - (2 if of == "metrics" else 1)
    return {path.parts[at]: path for path in sorted(Path().glob(pattern)) if path.is_dir() == (of != "metrics")}


def _lookup(data: object, dotted: str, where: Path) -> object:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            raise InputError(f"{where}: ${{{dotted}}}: no such value")
        data = data[part]
    return data
