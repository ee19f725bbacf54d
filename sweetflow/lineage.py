"""`sweetflow lineage PATH`: which data, code and params produced an artifact — and is it intact?

Walks the manifests back from the artifact that holds PATH to the roots (params and source files),
recomputes every recorded content hash, compares each stage's recorded params with params.yaml, and
asks DVC whether `dvc.lock` still matches the workspace. Any mismatch is a problem: a hand-edited or
stale artifact.
"""

from __future__ import annotations

import json
import reprlib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from sweetflow.core.artifacts import MANIFEST, content_hash, run_record_path
from sweetflow.core.errors import InputError
from sweetflow.core.params import ParamsError, section_of
from sweetflow.params import load_params


@dataclass
class Node:
    path: str
    manifest: dict | None  # None for a root input (a source or data file no stage produced)
    problems: list[str] = field(default_factory=list)
    parents: list[Node] = field(default_factory=list)

    def all_problems(self) -> list[str]:
        found = list(self.problems)
        for parent in self.parents:
            found.extend(p for p in parent.all_problems() if p not in found)
        return found


def _resolve(path: Path | str) -> Path:
    """`path` made absolute; a symlink loop is an InputError (Python 3.11 raises RuntimeError)."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as e:
        raise InputError(f"{path}: cannot be resolved: {e}") from None


def _read_json(path: Path) -> object:
    """A JSON file lineage reads (a manifest, a run record); unreadable or malformed: an InputError."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: line {e.lineno}, column {e.colno}: not valid JSON: {e.msg}") from None
    except (OSError, ValueError, RecursionError) as e:  # unreadable, not UTF-8, nested too deeply
        raise InputError(f"{path}: cannot be read: {e}") from None


def _hashes(value: object) -> bool:
    return isinstance(value, dict) and all("\0" not in k and isinstance(h, str) for k, h in value.items())


# The fields lineage walks, as `artifacts.stage_output` writes them: a manifest edited by hand or cut
# short is named with its field, not met as a traceback half-way through the tree.
MANIFEST_FIELDS = {
    "stage": (lambda v: isinstance(v, str), "a string"),
    "output_hash": (lambda v: isinstance(v, str), "a string"),
    "metrics": (_hashes, "an object of path: hash"),
    "inputs": (_hashes, "an object of path: hash"),
    "params": (lambda v: isinstance(v, dict), "an object of section: value"),
}
_SHORT = reprlib.Repr()


def _manifest(artifact: Path) -> dict:
    """An artifact's manifest, checked for every field lineage reads."""
    path = artifact / MANIFEST
    manifest = _read_json(path)
    if not isinstance(manifest, dict):
        raise InputError(f"{path}: expected a JSON object, got {type(manifest).__name__}")
    for name, (valid, expected) in MANIFEST_FIELDS.items():
        if not valid(manifest.get(name)):
            raise InputError(f"{path}: field {name!r}: expected {expected}, got {_SHORT.repr(manifest.get(name))}")
    return manifest


def run_record(stage: str, root: Path) -> dict:
    """A stage's run record (`reports/runs/<stage>.json`), {} if there is none."""
    path = root / run_record_path(stage)
    record = _read_json(path) if path.is_file() else {}
    if not isinstance(record, dict) or not isinstance(record.get("code", {}), dict):
        raise InputError(f"{path}: expected a JSON object whose 'code' is an object")
    return record


def find_artifact(path: Path | str, root: Path) -> Path | None:
    """The nearest directory at or above `path`, inside `root`, that carries a manifest."""
    path = _resolve(path)
    for candidate in [path, *path.parents]:
        if not candidate.is_relative_to(root):
            return None  # outside the project: none of its stages wrote it
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


def producer_of_metrics(path: Path, root: Path) -> Path | None:
    """The artifact whose manifest lists `path` (resolved, inside `root`) among its metrics files."""
    rel = path.relative_to(root).as_posix()
    for manifest in sorted((root / "data").rglob(MANIFEST)):
        if rel in _manifest(manifest.parent)["metrics"]:
            return manifest.parent
    return None


def trace(path: Path | str, root: Path | str = ".") -> Node:
    root = _resolve(root)
    target = _resolve(path)
    if not target.is_relative_to(root):
        raise InputError(f"{path}: outside the project root {root} (--root)")
    artifact = find_artifact(target, root) or producer_of_metrics(target, root)
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
    manifest = _manifest(artifact)
    node = seen[artifact] = Node(rel, manifest)
    stage = manifest["stage"]
    if content_hash(artifact) != manifest["output_hash"]:
        node.problems.append(f"{rel}: content differs from what stage {stage!r} wrote (edited by hand?)")
    for metrics, recorded_hash in manifest["metrics"].items():
        if not (root / metrics).exists() or content_hash(root / metrics) != recorded_hash:
            node.problems.append(f"{metrics}: differs from what stage {stage!r} wrote (edited by hand?)")
    for section, recorded in manifest["params"].items():
        current = section_of(params, section) if params is not None else None
        if current is not None and current != recorded:
            node.problems.append(f"{rel}: params.yaml section {section!r} changed since {stage!r} ran (stale)")
    for dep, recorded_hash in manifest["inputs"].items():
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
