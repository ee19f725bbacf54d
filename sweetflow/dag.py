"""The pipeline as `dvc.yaml` defines it, resolved by DVC's own parser, and the code each stage runs.

The Snakefile builds its rules from `load_stages()`, so `foreach`/`matrix` stages and `${}`
templating resolve exactly as `dvc repro` resolves them and the DAG is written once. What a stage
needs to run (cores, memory, GPUs, time) is declared beside it too, in its `meta: {resources: ...}`,
which DVC keeps but ignores and the Snakefile turns into the rule's `threads` and `resources`.
`code_closure` lists the project's source files a stage's module may import, which its `deps`
in dvc.yaml must cover (a test holds them to it).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sweetflow.core.params import DOMAINS

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = ("sweetflow", "stages")
MODULE_NAME = re.compile(r"(?:sweetflow|stages)(?:\.\w+)+")


class Resources(BaseModel):
    """What one run of a stage needs (dvc.yaml, a stage's `meta.resources`): one SLURM job's request."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpus: int = Field(ge=1, description="CPU cores: the rule's Snakemake threads, SLURM's --cpus-per-task.")
    mem_mb: int = Field(ge=1, description="Memory in MB: SLURM's --mem.")
    gpus: int = Field(
        ge=0, description="GPUs on one node: SLURM's --gpus; an accelerate launch should start one process per GPU."
    )
    runtime: int = Field(ge=1, description="Wall-time limit in minutes: SLURM's --time.")

    def snakemake(self) -> dict[str, int]:
        """The rule's `resources:`. `gpu` is the key the SLURM executor turns into --gpus and chooses a
        partition with GPUs for; a CPU stage leaves it out, so it goes to a partition without."""
        out = {"mem_mb": self.mem_mb, "runtime": self.runtime}
        if self.gpus:
            out["gpu"] = self.gpus
        return out


@dataclass(frozen=True)
class StageSpec:
    name: str  # DVC's stage name, e.g. "evaluate@backend-expert"
    cmd: str
    deps: tuple[str, ...]  # paths relative to the repo root
    outs: tuple[str, ...]
    params: str  # the stage's resolved params, as canonical JSON
    resources: Resources

    @property
    def rule_name(self) -> str:
        """A Snakemake rule name: DVC's address with non-identifier characters replaced."""
        return rule_name(self.name)

    @property
    def module(self) -> str | None:
        """The stage module `cmd` runs (`python -m stages.critic backend with_info`: stages.critic)."""
        match = re.match(r"python -m (stages\.\w+)", self.cmd)
        return match.group(1) if match else None

    @property
    def domain(self) -> str | None:
        """The domain the stage runs for: its module's first argument, when it names one."""
        words = self.cmd.split()
        return words[3] if len(words) > 3 and words[3] in DOMAINS else None


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
            resources = stage_resources(stage.name, stage.meta)
            specs.append(StageSpec(stage.name, cmd, tuple(deps), outs, json.dumps(params, sort_keys=True), resources))
    return specs


def stage_resources(name: str, meta: object) -> Resources:
    """A stage's `meta.resources`, checked; the error names the stage and the field."""
    declared = meta.get("resources") if isinstance(meta, dict) else None
    if declared is None:
        raise ValueError(f"dvc.yaml: stage {name!r} declares no meta.resources (cpus, mem_mb, gpus, runtime)")
    try:
        return Resources.model_validate(declared)
    except ValidationError as e:
        problems = "; ".join(f"meta.resources.{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ValueError(f"dvc.yaml: stage {name!r}: {problems}") from None


def _relative(path: str, root: Path) -> str:
    return Path(path).resolve().relative_to(root).as_posix()


def snakemake_inputs(spec: StageSpec, produced: set[str]) -> list[str]:
    """Inputs as Snakemake should see them.

    A directory another stage produces stays whole, to match that stage's output. A directory that
    holds other stages' outputs (the report reads `reports/<domain>`, where every evaluation writes
    its metrics) becomes those outputs: DVC links a dependency to every output inside it, Snakemake
    only to outputs named exactly. A file inside another stage's output directory (the tasks'
    `train.parquet`) becomes that directory, for the same reason. A source directory's mtime
    doesn't change when a file inside it is edited, so it is expanded to its files.
    """
    inputs = []
    for dep in spec.deps:
        path = Path(dep)
        inside = sorted(out for out in produced if Path(out).is_relative_to(path) and out != dep)
        holder = next((out for out in produced if path.is_relative_to(out) and out != dep), None)
        if dep in produced:
            inputs.append(dep)
        elif holder is not None:
            inputs.append(holder)
        elif inside:
            inputs.extend(inside)
        elif path.is_dir():
            inputs.extend(sorted(p.as_posix() for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts))
        else:
            inputs.append(dep)
    return inputs


# The loaders of a domain's part (sweetflow.core.domains), and the part each imports: of the domain
# the stage runs, or of every domain.
DOMAIN_LOADERS = {
    "get_domain": "domain",
    "get_domain_report": "report",
    "task_builder": "build",
    "domain_instructions": "instructions",
}
EVERY_DOMAIN_LOADERS = {"every_policy_instructions": "instructions"}


def code_closure(module: str, domains: Iterable[str] = DOMAINS, root: Path = ROOT) -> set[str]:
    """The project's source files (paths relative to `root`) that running `module` may import: every
    import in a file, at its top or inside a function, followed through the project's modules.
    Package `__init__.py` files are left out: they hold no code (a test checks). A module that
    calls a loader of DOMAIN_LOADERS may load that part of each of `domains` (`sweetflow.<domain>.<part>`);
    one of EVERY_DOMAIN_LOADERS, that part of every domain."""
    found: set[Path] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        path = _module_file(name, root)
        if path is None or path in found:
            continue
        found.add(path)
        tree = ast.parse(path.read_text(), str(path))
        todo += _imported(tree)
        called = {getattr(n.func, "id", None) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for loaders, loaded in ((DOMAIN_LOADERS, domains), (EVERY_DOMAIN_LOADERS, DOMAINS)):
            todo += [f"sweetflow.{d}.{part}" for loader, part in loaders.items() if loader in called for d in loaded]
    return {p.relative_to(root).as_posix() for p in found if p.name != "__init__.py"}


def _module_file(name: str, root: Path) -> Path | None:
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported(tree: ast.AST) -> list[str]:
    """Every first-party module an AST imports; `from a.b import c` counts a.b, and a.b.c when c is a
    module. A string that is a module's dotted name counts too: a process started with `python -m`
    (the sandbox worker) or a module preloaded by a forkserver runs that module's code."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.fullmatch(node.value):
            names.append(node.value)
    return [n for n in names if n.split(".")[0] in FIRST_PARTY]


def uncovered_code(spec: StageSpec, root: Path = ROOT) -> list[str]:
    """The project's source files the stage's module may run that none of its `deps` covers (a
    dependency covers a file when it is that file or a directory holding it)."""
    domains = [spec.domain] if spec.domain else list(DOMAINS)
    code = code_closure(spec.module, domains, root) if spec.module else set()
    return sorted(path for path in code if not any(Path(path).is_relative_to(dep) for dep in spec.deps))
