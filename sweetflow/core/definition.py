"""A stage's own definition in dvc.yaml, as the running stage reads it: the params sections it declares
and the paths of its output, metrics and plots. dvc.yaml is the one place they are written; the stage
records exactly the sections declared there and writes where the definition says.

DVC's parser (`sweetflow.dag.load_stages`) resolves the whole file and costs a second of imports in
every stage, so one stage's entry is resolved here, with the templating dvc.yaml uses: `${item}` of a
`foreach` over domains, `${item.<key>}` of a `matrix`, and `${a.b}` of a params.yaml value.
tests/unit/test_dag.py holds this resolution to DVC's for every stage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sweetflow.core.errors import InputError
from sweetflow.core.inputs import read_yaml

DVC_YAML = "dvc.yaml"
TEMPLATE = re.compile(r"\$\{\s*([\w.]+)\s*\}")


@dataclass(frozen=True)
class Definition:
    params: tuple[str, ...]  # the params keys the stage declares: `critics.with_info`, `episodes.max_turns`
    outs: tuple[str, ...]
    metrics: str | None  # its metrics file, when it has one
    plots: str | None  # its plots directory, when it has one

    @property
    def out(self) -> str:
        """The stage's data output (dvc.yaml lists it first, before the run record)."""
        return self.outs[0]


def definition(kind: str, domain: str | None, item: str | None, values: dict, root: Path | str = ".") -> Definition:
    """The resolved entry of stage `kind` for `domain` and `item` (None where the stage has none);
    `values` is params.yaml's data, which `${a.b}` reads."""
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
        return TEMPLATE.sub(lambda m: str(_lookup({**values, **scope}, m.group(1), path)), text)

    def first(entries: list | None) -> str | None:
        names = [next(iter(e)) if isinstance(e, dict) else e for e in entries or []]
        return resolve(names[0]) if names else None

    return Definition(
        params=tuple(resolve(p) for p in body.get("params", [])),
        outs=tuple(resolve(next(iter(o)) if isinstance(o, dict) else o) for o in body.get("outs", [])),
        metrics=first(body.get("metrics")),
        plots=first(body.get("plots")),
    )


def _lookup(data: object, dotted: str, where: Path) -> object:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            raise InputError(f"{where}: ${{{dotted}}}: no such value")
        data = data[part]
    return data
