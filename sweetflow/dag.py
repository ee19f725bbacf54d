"""The pipeline as `dvc.yaml` defines it, resolved by DVC's own parser, and the code each stage runs.

The Snakefile builds its rules from `load_stages()`, so `foreach`/`matrix` stages and `${}`
templating resolve exactly as `dvc repro` resolves them and the DAG is written once. What a stage
needs to run (cores, memory, GPUs, time) is declared beside it too, in its `meta: {resources: ...}`,
which DVC keeps but ignores and the Snakefile turns into the rule's `threads` and `resources`.
`code_closure` lists the project's source files a stage's module may import, which its `deps`
in dvc.yaml must cover; `sync_code_deps` (`sweetflow dag sync`) writes them there, and a test fails
when dvc.yaml is out of step.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sweetflow.core.errors import InputError
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
        stat = path.stat()
        imported, called = _read_module(path, stat.st_mtime_ns, stat.st_size, root)
        todo += imported
        for loaders, loaded in ((DOMAIN_LOADERS, domains), (EVERY_DOMAIN_LOADERS, DOMAINS)):
            todo += [f"sweetflow.{d}.{part}" for loader, part in loaders.items() if loader in called for d in loaded]
    return {p.relative_to(root).as_posix() for p in found if p.name != "__init__.py"}


@functools.cache
def _read_module(path: Path, mtime_ns: int, size: int, root: Path) -> tuple[list[str], set[str | None]]:
    """A file's first-party imports (the modules of a package it names too) and the names it calls,
    parsed once per version of the file (`sweetflow dag sync` follows the same modules for every run
    of every stage)."""
    tree = ast.parse(path.read_text(), str(path))
    imported = _imported(tree) + _package_modules(tree, root)
    return imported, {getattr(n.func, "id", None) for n in ast.walk(tree) if isinstance(n, ast.Call)}


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


def _package_modules(tree: ast.AST, root: Path) -> list[str]:
    """Every module of a project package whose dotted name an AST spells as a string: a loader that
    imports a package's modules by name (the registry of sweetflow/rl/methods) may run any of them, its
    sub-packages' too."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.fullmatch(node.value):
            package = root.joinpath(*node.value.split("."))
            if (package / "__init__.py").is_file():
                modules = [p.relative_to(root).with_suffix("") for p in sorted(package.rglob("*.py"))]
                names += [".".join(m.parts) for m in modules if m.name != "__init__"]
    return names


def stage_code(spec: StageSpec, root: Path = ROOT) -> set[str]:
    """The project's source files one run of a stage may import: of its domain, or of every domain."""
    domains = [spec.domain] if spec.domain else list(DOMAINS)
    return code_closure(spec.module, domains, root) if spec.module else set()


def uncovered_code(spec: StageSpec, root: Path = ROOT) -> list[str]:
    """The project's source files the stage's module may run that none of its `deps` covers (a
    dependency covers a file when it is that file or a directory holding it)."""
    return sorted(path for path in stage_code(spec, root) if not _covers(spec.deps, path))


def _covers(deps: Iterable[str], path: str) -> bool:
    return any(Path(path).is_relative_to(dep) for dep in deps)


# Directories written whole when a stage needs a file in them: every stage runs sweetflow/core, and
# one line for it keeps the entries readable (a change there reruns every stage anyway).
WHOLE = ("sweetflow/core",)


@dataclass(frozen=True)
class CodeDepChange:
    """A line that `sweetflow dag sync` adds to or removes from a stage's `deps` in dvc.yaml."""

    stage: str  # the entry's name in dvc.yaml: a foreach or matrix entry stands for all its runs
    path: str  # as written in dvc.yaml, `${...}` included
    added: bool

    def __str__(self) -> str:
        return f"{self.stage}: {'add' if self.added else 'remove'} {self.path}"


def sync_code_deps(root: Path | str = ".") -> tuple[str, list[CodeDepChange]]:
    """The text of `root`'s dvc.yaml with every stage's code deps in step with its imports, and the
    changes. A code dep is a path under stages/ or sweetflow/ that is Python or a directory holding
    some. One is removed when it covers no file that any run of its entry imports (a foreach or
    matrix entry needs the union of its runs'); each file a run imports that no dep covers is added
    after the entry's last code dep, as a file, as its directory in WHOLE, or with the entry's domain
    argument (`sweetflow/${item}/...`) when every domain has that file. Directories listed by hand
    stay while they cover something, and every other line stays byte for byte: lines are removed
    and inserted in the text, which is never re-emitted."""
    from ruamel.yaml import YAML

    root = Path(root).resolve()
    text = (root / "dvc.yaml").read_text()
    entries = YAML().load(text)["stages"]
    runs: dict[str, list[StageSpec]] = {}
    for spec in load_stages(root):
        runs.setdefault(spec.name.split("@")[0], []).append(spec)
    drop: set[int] = set()
    insert: dict[int, list[str]] = {}
    changes = []
    lines = text.splitlines(keepends=True)
    for name, entry in entries.items():
        if name not in runs:  # a foreach over an empty list: no run to read imports from
            continue
        body = entry.get("do", entry)
        deps = body.get("deps")
        if not deps:  # no list to write into
            raise InputError(f"dvc.yaml: stage {name!r} has no deps; list at least its module, stages/{name}.py")
        specs = runs[name]
        assert all(len(spec.deps) == len(deps) for spec in specs), f"{name}: DVC resolved another number of deps"
        code = [i for i, dep in enumerate(specs[0].deps) if _is_code(dep, root)]
        needed = {spec.name: stage_code(spec, root) for spec in specs}
        stale = [i for i in code if not any(_covers([s.deps[i]], f) for s in specs for f in needed[s.name])]
        domain_arg = body["cmd"].split()[3] if specs[0].domain else None
        added = sorted(
            {_written(f, s.domain, domain_arg, root) for s in specs for f in needed[s.name] if not _covers(s.deps, f)}
        )
        drop.update(deps.lc.item(i)[0] for i in stale)
        changes += [CodeDepChange(name, deps[i], added=False) for i in stale]
        changes += [CodeDepChange(name, path, added=True) for path in added]
        if added:
            after = deps.lc.item(code[-1] if code else len(deps) - 1)[0]
            dash = lines[after][: lines[after].index("- ") + 2]
            insert[after] = [f"{dash}{path}\n" for path in added]
    out = []
    for number, line in enumerate(lines):
        out += ([] if number in drop else [line]) + insert.get(number, [])
    return "".join(out), changes


def _is_code(dep: str, root: Path) -> bool:
    """A first-party path that is Python, holds Python, or is gone (a deleted module's line is stale)."""
    path = root / dep
    if Path(dep).parts[0] not in FIRST_PARTY:
        return False
    if path.is_dir():
        return any(path.rglob("*.py"))
    return path.suffix == ".py" or not path.exists()


def _written(path: str, domain: str | None, domain_arg: str | None, root: Path) -> str:
    """How dvc.yaml names a file a run of domain `domain` imports; `domain_arg` is the entry's
    spelling of that domain in its cmd (`${item}`, `${item.domain}`)."""
    whole = next((d for d in WHOLE if Path(path).is_relative_to(d)), None)
    if whole:
        return whole
    own = f"sweetflow/{domain}"
    if domain and Path(path).is_relative_to(own):
        rest = Path(path).relative_to(own)
        if all((root / "sweetflow" / d / rest).is_file() for d in DOMAINS):
            return f"sweetflow/{domain_arg}/{rest.as_posix()}"
    return path
