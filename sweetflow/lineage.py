"""`sweetflow lineage PATH`: which data, code and params produced an artifact — and is it intact?

Walks the manifests back from the artifact that holds PATH to the roots (params and source files),
recomputes every recorded content hash, compares each stage's recorded params with params.yaml, and
asks DVC whether `dvc.lock` still matches the workspace. Any mismatch is a problem: a hand-edited or
stale artifact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from sweetflow.artifacts import MANIFEST, content_hash, read_manifest
from sweetflow.params import ParamsError, load_params, section_of


@dataclass
class Node:
    path: str
    manifest: dict | None  # None for a root input (a source or data file no stage produced)
    problems: list[str] = field(default_factory=list)
    parents: list["Node"] = field(default_factory=list)

    def all_problems(self) -> list[str]:
        found = list(self.problems)
        for parent in self.parents:
            found.extend(p for p in parent.all_problems() if p not in found)
        return found


def find_artifact(path: Path | str, root: Path) -> Path | None:
    """The nearest directory at or above `path` (inside `root`) that carries a manifest."""
    path = Path(path).resolve()
    for candidate in [path, *path.parents]:
        if candidate.is_dir() and (candidate / MANIFEST).is_file():
            return candidate
        if candidate == root:
            break
    return None


def producer_of_metrics(path: Path | str, root: Path) -> Path | None:
    """The artifact whose manifest lists `path` among its metrics files."""
    rel = Path(path).resolve().relative_to(root).as_posix()
    for manifest in sorted((root / "data").rglob(MANIFEST)):
        if rel in read_manifest(manifest.parent).get("metrics", {}):
            return manifest.parent
    return None


def trace(path: Path | str, root: Path | str = ".") -> Node:
    root = Path(root).resolve()
    artifact = find_artifact(path, root) or producer_of_metrics(path, root)
    if artifact is None:
        raise FileNotFoundError(f"{path}: no stage output's manifest covers it")
    try:
        params = load_params(root / "params.yaml")
    except ParamsError as e:
        params, params_error = None, str(e)
    else:
        params_error = None
    seen: dict[Path, Node] = {}
    node = _visit(artifact, root, params, seen)
    if params_error:
        node.problems.append(params_error)
    return node


def _visit(artifact: Path, root: Path, params: BaseModel | None, seen: dict[Path, Node]) -> Node:
    if artifact in seen:
        return seen[artifact]
    rel = artifact.relative_to(root).as_posix()
    manifest = read_manifest(artifact)
    node = seen[artifact] = Node(rel, manifest)
    stage = manifest.get("stage", "?")
    if content_hash(artifact) != manifest.get("output_hash"):
        node.problems.append(f"{rel}: content differs from what stage {stage!r} wrote (edited by hand?)")
    for metrics, recorded_hash in manifest.get("metrics", {}).items():
        if not (root / metrics).exists() or content_hash(root / metrics) != recorded_hash:
            node.problems.append(f"{metrics}: differs from what stage {stage!r} wrote (edited by hand?)")
    for section, recorded in (manifest.get("params") or {}).items():
        current = section_of(params, section) if params is not None else None
        if current is not None and current != recorded:
            node.problems.append(f"{rel}: params.yaml section {section!r} changed since {stage!r} ran (stale)")
    for dep, recorded_hash in manifest.get("inputs", {}).items():
        dep_path = root / dep
        if not dep_path.exists():
            node.problems.append(f"{rel}: input {dep} is missing")
            node.parents.append(Node(dep, None))
            continue
        parent_artifact = find_artifact(dep_path, root)
        parent = _visit(parent_artifact, root, params, seen) if parent_artifact else Node(dep, None)
        if content_hash(dep_path) != recorded_hash:
            node.problems.append(f"{rel}: input {dep} changed since {stage!r} ran (stale)")
        node.parents.append(parent)
    return node


def dvc_lock_problems(root: Path | str, stages: set[str]) -> list[str]:
    """Stages in `stages` whose dvc.lock entry no longer matches the workspace, as DVC sees it."""
    root = Path(root)
    if not (root / "dvc.lock").exists():
        return ["dvc.lock not found: the artifacts were not produced by `dvc repro` here"]
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        status = repo.status()
    problems = []
    for name, changes in sorted(status.items()):
        stage = name.split(":")[-1]
        if stage in stages:
            problems.append(f"dvc.lock: stage {stage!r} is not up to date: {_describe_changes(changes)}")
    return problems


def _describe_changes(changes: list) -> str:
    parts = []
    for change in changes:
        if isinstance(change, dict):
            for kind, items in change.items():
                parts.append(f"{kind} {items}")
        else:
            parts.append(str(change))
    return "; ".join(parts)


def stages_of(node: Node) -> set[str]:
    names = {node.manifest["stage"]} if node.manifest else set()
    for parent in node.parents:
        names |= stages_of(parent)
    return names
