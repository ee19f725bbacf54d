"""The stage contract: outputs appear whole or not at all, each with a manifest that traces it.

A stage writes into a temporary sibling directory and renames it into place only when everything,
including `manifest.json`, is written. A killed stage leaves at most a `.tmp-*` directory behind,
never a half artifact at the declared path.

The manifest records what `sweetflow lineage` checks: the stage, its validated params, a content
hash of every input and of the output itself, and the seed; and, for a stage that generated through
a server it started (`backend: served`), what each server served (`served`: the checkpoint, its
hash, the model name and the command line, without the port); for a stage that asked an endpoint
elsewhere (`backend: openai`), what answered (`endpoints`: the responses' model names and system
fingerprints); for an adopted base checkpoint, how its chat template was made usable
(`chat_template`). It holds nothing else, so that the same inputs, params and code give the same
bytes, and DVC's early cut-off works: a stage rerun with an identical result leaves every stage after
it up to date. What differs from run to run (when it started and how long it took, the commit, the
packages, the machine and its CPU) goes to the stage's run record, `reports/runs/<stage>.json`: a
cached output of the stage like its data, so that DVC's run cache and `dvc push` carry it with the
artifact it describes (a restored artifact comes back with the record of the run that made it).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import psutil
from pydantic import BaseModel

from sweetflow.core import reproducibility
from sweetflow.core.errors import InputError, disk_full, disk_full_error
from sweetflow.core.inputs import file_kind
from sweetflow.core.params import ParamsError

MANIFEST = "manifest.json"
# Files in an output directory that are bookkeeping, not data: our manifest (it records the data's
# hashes, so it cannot be part of them) and the marker Snakemake puts in every directory() output.
NOT_DATA = frozenset({MANIFEST, ".snakemake_timestamp"})
RUNS = Path("reports/runs")  # every stage's run record, dvc.yaml's second output of each stage
PACKAGES = ("sweetflow", "polars", "pydantic", "torch", "transformers", "accelerate", "dvc", "snakemake")


def content_hash(path: Path | str) -> str:
    """sha256 of a file, or of a directory's files (relative path + content), bookkeeping excluded,
    so that the hash is a function of the data alone, whichever engine ran the stage."""
    path = Path(path)
    if path.is_file():
        return _file_sha256(path)
    if not path.is_dir():
        if path.exists():  # a device, a named pipe, a socket: reading one has no end, or blocks
            raise InputError(f"{path}: {file_kind(path)}, not a file to read")
        raise FileNotFoundError(f"{path}: no such file or directory")
    digest = hashlib.sha256()
    files = (p for p in path.rglob("*") if p.is_file() and p.name not in NOT_DATA)
    for f in sorted(f for f in files if not any(is_temporary(part) for part in f.relative_to(path).parts)):
        digest.update(f.relative_to(path).as_posix().encode() + b"\0" + _file_sha256(f).encode() + b"\n")
    return digest.hexdigest()


def temporary_path(path: Path) -> Path:
    """Where `path` is written before it is renamed into place: `.<name>.tmp-<pid>` beside it."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def is_temporary(name: str) -> bool:
    """Whether a file or directory name is a `temporary_path`, as a killed stage may leave one behind
    (DVC ignores them too: `.dvcignore`)."""
    return name.startswith(".") and ".tmp-" in name


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# What a run of the DAG itself writes into git-tracked files: the lock, the uncached metrics, tables and
# plots, and params.yaml (`dvc exp run -S` writes an experiment's values there; every manifest holds the
# validated params). Their changes do not make the code that ran differ from its commit.
PIPELINE_WRITES = ("dvc.lock", "reports", "params.yaml")


def code_version() -> dict:
    """The commit the working tree is at, and whether anything tracked differs from it other than
    what the pipeline writes (a run started from a clean commit is not `dirty` because earlier
    stages of the same run updated dvc.lock)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", *(f":(exclude){p}" for p in PIPELINE_WRITES)
    )
    return {"git_commit": commit, "dirty": bool(status) if status is not None else None}


def cpu() -> dict:
    """This machine's CPU: its name, its type (a virtual machine's name, "AMD EPYC", can hide both a Zen 1 and a
    Zen 3, whose float kernels differ) and its vector instructions."""
    first: dict[str, str] = {}  # the first processor's fields; the others repeat them
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            first.setdefault(key.strip(), value.strip())
    except OSError:  # not Linux
        pass
    flags = set(first.get("flags", "").split())
    return {
        "cpu": first.get("model name") or platform.processor() or platform.machine(),
        "family": first.get("cpu family"),
        "model": first.get("model"),
        "vector_instructions": sorted(
            f for f in flags if f.startswith(("avx", "amx", "fma")) or f in ("sse4_2", "f16c")
        ),
    }


def machine() -> dict:
    """The facts of this machine that decide float results: the CPU (`cpu`), the threads, the GPUs the
    process saw and the kernels torch and MKL chose (`kernels`). Runs of the same inputs agree bit for
    bit with the same thread counts and either the same CPU type or `kernels.mode` portable on both."""
    torch = sys.modules.get("torch")
    return {
        **cpu(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads() if torch else None,
        "gpus": gpus(torch),
        "kernels": reproducibility.active(),
        "host": platform.node(),
        "system": platform.platform(),
    }


def gpus(torch) -> list[dict]:
    """The CUDA GPUs the stage's process saw, by name and memory; none where torch was not imported
    (a stage that runs no model) or no GPU is visible."""
    if torch is None or not torch.cuda.is_available():
        return []
    return [
        {"name": props.name, "memory_gb": round(props.total_memory / 2**30, 1)}
        for props in (torch.cuda.get_device_properties(i) for i in range(torch.cuda.device_count()))
    ]


def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


# What answered the requests this process sent to OpenAI-compatible endpoints (sweetflow.endpoint): per
# base URL, the model names and system fingerprints of the responses. DVC sees a URL in params, never
# the model behind it or a change of that model; the manifest of the stage's output records it.
_ANSWERED: dict[str, set[tuple[str, str | None]]] = {}


def record_answer(base_url: str, model: str, system_fingerprint: str | None) -> None:
    _ANSWERED.setdefault(base_url, set()).add((model, system_fingerprint))


def answered_endpoints() -> dict[str, dict]:
    return {
        url: {
            "models": sorted({model for model, _ in answers}),
            "system_fingerprints": sorted({fp for _, fp in answers if fp}),
        }
        for url, answers in sorted(_ANSWERED.items())
    }


def read_manifest(artifact: Path | str) -> dict:
    return json.loads((Path(artifact) / MANIFEST).read_text())


def _plain(value: BaseModel | object) -> object:
    """A params section as JSON data: a validated model, or a top-level value such as `seeds`."""
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def write_json(path: Path, obj: object) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


@dataclass
class StageOutput:
    """What a stage fills inside `stage_output`: files in `dir`, numbers in `metrics`, in `run` the
        facts of this run that differ between runs of the same inputs (such as training time), and in
        `served` what the servers it started served, in `chat_template` how an adopted checkpoint's chat template
        was made usable (`sweetflow.models.checkpoint`), in `devices` where each model ran
    (`sweetflow.models.checkpoint.placement`). `inputs` holds the inputs' content hashes."""

    dir: Path
    inputs: dict[str, str] = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)
    served: dict = field(default_factory=dict)
    chat_template: dict = field(default_factory=dict)
    devices: dict = field(default_factory=dict)  # each model the stage ran: its device type and dtype


@contextmanager
def stage_output(
    out: Path | str,
    stage: str,
    params: dict[str, BaseModel | object],
    inputs: list[Path | str] = (),
    seed: int | None = None,
    metrics: Path | str | None = None,
) -> Iterator[StageOutput]:
    """Yield a StageOutput whose temporary `dir` replaces `out`, with a manifest, on success.

    `params` maps each params.yaml section the stage reads to its validated model; `inputs` are the
    data files and directories it reads. With `metrics`, the filled `metrics` dict is written to
    that JSON file too: it lives apart from `out` so that DVC can declare it a metrics file
    (`cache: false`, committed to git); the manifest records its hash. The run record's `started`
    and `wall_time_s` are those of the stage's process, imports and work done before the output was
    opened (such as training) included: the time the stage costs a run of the DAG.

    On an exception the temporary directory is removed and what was at `out` stays as it was.
    """
    out = Path(out)
    input_hashes = {Path(p).as_posix(): content_hash(p) for p in inputs}  # first: a bad input leaves nothing behind
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(out)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    started = psutil.Process().create_time()
    result = StageOutput(tmp, input_hashes)
    try:
        yield result
        metrics_files = {}
        if metrics is not None:
            metrics = Path(metrics)
            metrics.parent.mkdir(parents=True, exist_ok=True)
            metrics_tmp = temporary_path(metrics)
            write_json(metrics_tmp, result.metrics)
            metrics_files[metrics.as_posix()] = content_hash(metrics_tmp)
        manifest = {
            "stage": stage,
            "output": out.as_posix(),
            "output_hash": content_hash(tmp),
            "metrics": metrics_files,
            # Every stage's floats depend on which kernels ran: params `reproducibility`, as it ran.
            "params": {
                **{section: _plain(value) for section, value in params.items()},
                "reproducibility": reproducibility.active()["mode"],
            },
            "inputs": input_hashes,
            "seed": seed,
            **({"served": result.served} if result.served else {}),
            **({"endpoints": answered_endpoints()} if _ANSWERED else {}),
            **({"chat_template": result.chat_template} if result.chat_template else {}),
            **({"devices": result.devices} if result.devices else {}),
        }
        write_json(tmp / MANIFEST, manifest)
        replace_dir(tmp, out)
        if metrics is not None:
            os.replace(metrics_tmp, metrics)
        write_run_record(
            stage,
            {
                "stage": stage,
                "output": out.as_posix(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                "wall_time_s": round(time.time() - started, 3),
                "code": code_version(),
                "packages": package_versions(),
                "machine": machine(),
                **result.run,
            },
        )
    except Exception as e:
        if disk_full(e, tmp):  # one line naming the output, not a library's traceback
            raise disk_full_error(out) from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if metrics is not None:
            temporary_path(Path(metrics)).unlink(missing_ok=True)


def run_record_path(stage: str) -> Path:
    """The run record of a stage, by DVC's name of it (`critic@backend-with_info`)."""
    return RUNS / f"{stage}.json"


def write_run_record(stage: str, record: dict) -> None:
    """Write `reports/runs/<stage>.json` whole (temporary file, then rename)."""
    path = run_record_path(stage)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    try:
        write_json(tmp, record)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_run_record(stage: str, root: Path | str = ".") -> dict | None:
    path = Path(root) / run_record_path(stage)
    return json.loads(path.read_text()) if path.is_file() else None


def checkpoint_path(stage: str, params: dict[str, BaseModel | object], inputs: list[Path | str]) -> Path:
    """Where a stage keeps work in progress for resuming. Outside its declared outputs (DVC deletes
    those before rerunning a stage) and named by everything that decides the work, so a changed
    configuration never resumes from another one's episodes."""
    key = json.dumps(
        {
            "params": {name: _plain(value) for name, value in params.items()},
            "inputs": {Path(p).as_posix(): content_hash(p) for p in inputs},
        },
        sort_keys=True,
    )
    return Path(".sweetflow/checkpoints") / f"{stage}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsonl"


SAVE_EVERY_VARIABLE, SAVE_EVERY_DEFAULT = "SWEETFLOW_SAVE_EVERY_S", 900.0


def save_every_seconds(env: dict[str, str]) -> float:
    """Seconds between two saves of what a long run keeps for a rerun (a training's state, a pass's rows):
    SWEETFLOW_SAVE_EVERY_S, else 15 minutes."""
    value = env.get(SAVE_EVERY_VARIABLE)
    if value is None:
        return SAVE_EVERY_DEFAULT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or seconds < 0:
        raise ParamsError(f"{SAVE_EVERY_VARIABLE}={value!r}: not a number of seconds (0 saves after every step)")
    return seconds


class JsonLines:
    """Finished work of a stage, one JSON record a line, appended and fsynced a batch at a time, for a rerun
    of a run cut off (at a `checkpoint_path`). A line a kill tore mid-write is skipped when read: the work it
    held is simply done again."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def read(self) -> list[dict]:
        records = []
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return records

    def append(self, records: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in records))
            fh.flush()
            os.fsync(fh.fileno())


@contextmanager
def written_whole(directory: Path) -> Iterator[Path]:
    """A directory to fill (the block's), renamed to `directory` once the block ends: a kill or an error in
    the block leaves at `directory` what stood there before, never part of the new one."""
    staging = temporary_path(directory)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        yield staging
        replace_dir(staging, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def replace_dir(new: Path, out: Path) -> None:
    """Put `new` at `out`. A directory can't be renamed over a non-empty one, so the old one is
    first moved aside; either name always holds a complete artifact."""
    if out.exists() or out.is_symlink():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
        os.replace(new, out)
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()
    else:
        os.replace(new, out)
