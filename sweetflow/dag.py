"""The pipeline as `dvc.yaml` defines it, resolved by DVC's own parser.

The Snakefile builds its rules from `load_stages()`, so `foreach`/`matrix` stages and `${}`
templating resolve exactly as `dvc repro` resolves them and the DAG is written once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StageSpec:
    name: str  # DVC's stage name, e.g. "evaluate@backend-expert"
    cmd: str
    deps: tuple[str, ...]  # paths relative to the repo root
    outs: tuple[str, ...]
    params: str  # the stage's resolved params, as canonical JSON

    @property
    def rule_name(self) -> str:
        """A Snakemake rule name: DVC's address with non-identifier characters replaced."""
        return rule_name(self.name)


def rule_name(stage_name: str) -> str:
    return re.sub(r"\W", "_", stage_name)


def is_directory_out(path: str) -> bool:
    """Convention of this project: every stage output without a file extension is a directory."""
    return Path(path).suffix == ""


def load_stages(root: Path | str = ".") -> list[StageSpec]:
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    root = Path(root).resolve()
    with Repo(str(root)) as repo:
        specs = []
        for stage in repo.index.stages:
            deps, params = [], {}
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency):
                    params.update(dep.read_params())
                else:
                    deps.append(_relative(dep.fs_path, root))
            cmd = stage.cmd if isinstance(stage.cmd, str) else " && ".join(stage.cmd)
            outs = tuple(_relative(o.fs_path, root) for o in stage.outs)
            # `name`, not `addressing`: the latter is prefixed with the dvc.yaml's path when the
            # working directory is not the project's, and the project has one dvc.yaml.
            specs.append(StageSpec(stage.name, cmd, tuple(deps), outs, json.dumps(params, sort_keys=True)))
    return specs


def _relative(path: str, root: Path) -> str:
    return Path(path).resolve().relative_to(root).as_posix()


def snakemake_inputs(spec: StageSpec, produced: set[str]) -> list[str]:
    """Inputs as Snakemake should see them.

    A directory another stage produces stays whole, to match that stage's output. A directory that
    holds other stages' outputs (the report reads `reports/<domain>`, where every evaluation writes
    its metrics) becomes those outputs: DVC links a dependency to every output inside it, Snakemake
    only to outputs named exactly. A source directory's mtime doesn't change when a file inside it
    is edited, so it is expanded to its files.
    """
    inputs = []
    for dep in spec.deps:
        path = Path(dep)
        inside = sorted(out for out in produced if Path(out).is_relative_to(path) and out != dep)
        if dep in produced:
            inputs.append(dep)
        elif inside:
            inputs.extend(inside)
        elif path.is_dir():
            inputs.extend(sorted(p.as_posix() for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts))
        else:
            inputs.append(dep)
    return inputs
