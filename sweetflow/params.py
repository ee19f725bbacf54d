"""Every knob of the pipeline: one pydantic model per section of `params.yaml`.

The models are the documentation: each field carries a description, `sweetflow params` prints them
with their effective values, and unknown or ill-typed keys stop a stage with a message naming the
key, the value and what was expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sweetflow.errors import InputError
from sweetflow.sandbox import SandboxParams

PARAMS_FILE = Path("params.yaml")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TasksParams(Section):
    """Backend task generation or import (stage `tasks`)."""

    source: Literal["procedural", "colbench"] = Field(
        "procedural",
        description="'procedural': generate offline tasks by seed; 'colbench': import official ColBench JSONL files.",
    )
    seed: int = Field(0, description="Seed of the procedural generator.")
    n_train: int = Field(400, ge=0, le=10_000, description="Procedural training tasks (capacity 10,000).")
    n_test: int = Field(200, ge=1, le=1_000, description="Procedural test tasks (capacity 1,000).")
    families: list[str] | None = Field(None, description="Restrict generation to these families; null means all.")
    colbench_train: Path | None = Field(None, description="Official backend train JSONL, for source 'colbench'.")
    colbench_test: Path | None = Field(None, description="Official backend test JSONL, for source 'colbench'.")
    colbench_test_rows: int = Field(
        1000, ge=1, description="Use the first N rows of the test file (the official test set is the first 1,000)."
    )

    @model_validator(mode="after")
    def _colbench_needs_files(self) -> "TasksParams":
        if self.source == "colbench" and self.colbench_test is None:
            raise ValueError("source 'colbench' needs colbench_test (path to the official backend test JSONL)")
        return self


class Params(Section):
    """The whole of params.yaml."""

    tasks: TasksParams = Field(default_factory=TasksParams, description=TasksParams.__doc__)
    sandbox: SandboxParams = Field(default_factory=SandboxParams, description=SandboxParams.__doc__)


class ParamsError(InputError):
    """params.yaml is not what the models expect; the message names each bad key."""


def _describe(err: dict) -> str:
    key = ".".join(str(p) for p in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"{key}: unknown key (value {err['input']!r}); check its spelling against `sweetflow params`"
    return f"{key}: {err['msg']} (got {err['input']!r})"


def load_params(path: Path | str = PARAMS_FILE) -> Params:
    """Read and validate params.yaml; a missing file means all defaults."""
    path = Path(path)
    raw = yaml.safe_load(path.read_text()) if path.exists() else None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParamsError(f"{path}: expected a mapping of sections, got {type(raw).__name__}")
    try:
        return Params.model_validate(raw)
    except ValidationError as e:
        problems = "\n  ".join(_describe(err) for err in e.errors())
        raise ParamsError(f"{path}: invalid parameters:\n  {problems}") from None


def describe_params(model: BaseModel, prefix: str = "") -> list[tuple[str, object, str]]:
    """(dotted key, effective value, description) for every leaf field, in declaration order."""
    rows = []
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        key = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            rows.extend(describe_params(value, key + "."))
        else:
            rows.append((key, value, info.description or ""))
    return rows
