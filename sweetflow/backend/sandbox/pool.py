"""Run untrusted Python — agent answers, imported references — isolated from us and each other.

`Sandbox` keeps a small pool of pre-warmed worker processes (`sweetflow.backend.sandbox.worker`). Each job
(one piece of code plus the test calls to evaluate after it) runs in a fresh child forked by a
worker's template: own session, kept from every other process (by a uid, or a pid namespace, of its
own), resource limits, no network, an empty temporary directory, a scrubbed environment. The
per-call timeout is enforced in the child, the per-job wall-clock bound by the worker, and a worker
that dies is replaced; nothing an answer does can take the caller down. Outputs come back as
plain-data JSON text (`sweetflow.backend.sandbox.plaindata`).

A child sees a root of its own, empty but for what Python needs, read-only: the standard library and
the site-packages on sys.path, the interpreter and the system's shared libraries; then a minimal
/dev, a procfs in which it sees no process but its own, and a fresh /tmp. Nothing else of the host:
not the project, a second checkout, a `dvc exp run --temp` copy, the file being scored or the home
directories, wherever they lie; its mount table names only what was put back. The template that
forks it has never held an answer's text or results: the code reaches the child through a pipe
only the worker writes, and the results come back through one only the worker reads, so no child
starts with an earlier answer in its memory. The workers put up these walls as root, or as a normal
user in unprivileged user namespaces; where they can do neither the pool refuses to start, unless
`run_without_walls` is set.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import queue
import random
import select
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from sweetflow.backend.params import SandboxParams
from sweetflow.core.errors import StageFailed

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
# The walls an answer runs behind, by the two ways a worker has of putting them up: as root, a fresh
# uid per worker keeps its children from every other process; as a normal user, in an unprivileged
# user namespace, a pid namespace of its own per child does.
WALLS = {
    "root": ("no-network", "private-tmp", "unprivileged-uid", "hidden-project", "hidden-processes"),
    "user-namespace": ("no-network", "private-tmp", "own-pid-namespace", "hidden-project", "hidden-processes"),
}


class SandboxUnavailable(StageFailed):
    """The sandbox cannot put up its walls here, and the params do not allow running without them."""


@dataclass(frozen=True)
class Job:
    code: str
    calls: Sequence[str]
    # "module": the code's top-level names are visible to its functions, as when a file runs.
    # "function": they are locals of an enclosing function, as in ColBench's evaluator (ScoringRules).
    namespace: str = "module"


@dataclass
class Execution:
    """What running one job produced.

    `status` is "ok" when the code ran and every call was attempted; otherwise the reason the run
    ended early. `outputs[i]` is the plain-data JSON of call i, or None when `call_errors[i]` says
    why there is none.
    """

    status: str
    outputs: list[str | None]
    call_errors: list[str | None]

    @classmethod
    def failed(cls, status: str, n_calls: int) -> Execution:
        return cls(status, [None] * n_calls, ["not_run"] * n_calls)

    def failure_kinds(self) -> Counter:
        kinds = Counter({self.status: 1}) if self.status != "ok" else Counter()
        kinds.update(f"call_{e}" for e in self.call_errors if e not in (None, "not_run"))
        return kinds


def parse_result(reply: dict, n_calls: int) -> Execution:
    """Turn a worker reply into an Execution; anything malformed counts as a protocol error."""
    outputs: list[str | None] = [None] * n_calls
    errors: list[str | None] = ["not_run"] * n_calls
    status = None
    lines = reply.get("lines", "").splitlines()
    try:
        for line in lines:
            where, kind, *rest = line.split("\t", 2)
            if where in ("compile", "exec"):
                if kind == "error":
                    status = f"{where}_{rest[0]}" if where == "exec" else "compile_error"
                continue
            i = int(where)
            if not 0 <= i < n_calls:
                raise ValueError(f"call index {i} out of range")
            if kind == "out":
                outputs[i], errors[i] = rest[0], None
            elif kind == "error":
                outputs[i], errors[i] = None, rest[0][:40]
            else:
                raise ValueError(f"unknown record {kind!r}")
    except (ValueError, IndexError):
        return Execution.failed("protocol_error", n_calls)
    if status is None:
        if reply.get("problem"):
            status = reply["problem"]
        elif reply.get("signal"):
            status = "killed_by_signal"
        elif not lines:
            status = "no_result"
        elif "not_run" in errors:
            status = "exited_early"
        else:
            status = "ok"
    return Execution(status, outputs, errors)


@dataclass
class _Worker:
    params: SandboxParams
    proc: subprocess.Popen | None = None
    isolation: list[str] = field(default_factory=list)
    problem: str | None = None  # why the worker has no walls, in its own words
    scratch: tempfile.TemporaryDirectory | None = None

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the worker process; `wait_ready` then waits for its walls to be up."""
        self.scratch = tempfile.TemporaryDirectory(prefix="sweetflow-sandbox-")
        os.chmod(self.scratch.name, 0o700)
        # A fresh uid per worker, far above any real account, so that its children can signal
        # nobody but themselves, and RLIMIT_NPROC counts them alone.
        uid = random.SystemRandom().randrange(1_000_000, 2_000_000_000)
        env = {
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(PROJECT_ROOT),
            "SWEETFLOW_SANDBOX_UID": str(uid),
            "SWEETFLOW_SANDBOX_SCRATCH": self.scratch.name,
            # On sys.path, but never put back in the children's root: its code regenerates the tasks.
            "SWEETFLOW_SANDBOX_PROJECT": str(PROJECT_ROOT),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sweetflow.backend.sandbox.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd="/",
            start_new_session=True,
        )

    def wait_ready(self) -> None:
        hello = self._read_line(timeout=60)
        if hello is None:
            raise RuntimeError("sandbox worker failed to start")
        reply = json.loads(hello)
        self.isolation, self.problem = reply["isolation"], reply.get("problem")

    def _read_line(self, timeout: float) -> bytes | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline() or None

    @functools.cached_property
    def limits(self) -> dict:
        # Only the limits: BackendScoringParams adds scoring options that are no business of the worker's.
        return {name: getattr(self.params, name) for name in SandboxParams.model_fields if name != "run_without_walls"}

    def run(self, job: Job) -> Execution:
        request = {"code": job.code, "calls": list(job.calls), "namespace": job.namespace, "limits": self.limits}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            line = self._read_line(timeout=self.params.task_timeout_s + 30)
        except (BrokenPipeError, OSError):
            line = None
        if line is None:
            # The worker itself died or hung (an answer got at it): replace it, fail this job only.
            self.stop()
            self.start()
            return Execution.failed("sandbox_error", len(job.calls))
        return parse_result(json.loads(line), len(job.calls))

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    pipe.close()
                except OSError:  # unsent bytes to a dead worker
                    pass
            self.proc = None
        if self.scratch is not None:
            self.scratch.cleanup()
            self.scratch = None


class Sandbox:
    """A pool of sandbox workers. Use as a context manager; `run` keeps the order of its jobs."""

    def __init__(self, params: SandboxParams):
        self.params = params
        n = self.params.workers or os.cpu_count() or 1
        self._workers = [_Worker(self.params) for _ in range(n)]

    def __enter__(self) -> Sandbox:
        try:
            # All launched before any is waited for: each puts up its walls while the others do.
            for w in self._workers:
                w.launch()
            for w in self._workers:
                w.wait_ready()
        except BaseException:
            self.__exit__()
            raise
        if self.walls is None:
            missing = ", ".join(layer for layer in WALLS["user-namespace"] if layer not in self.isolation)
            why = self._workers[0].problem or "unknown"
            if not self.params.run_without_walls:
                self.__exit__()
                raise SandboxUnavailable(
                    f"the sandbox cannot wall off untrusted code on this machine (missing: {missing}), so it will "
                    f"not run any. It needs root, or unprivileged user namespaces; here: {why}. To run the code "
                    "anyway, with network access and the user's files in its reach, set run_without_walls: true "
                    "in the sandbox's params (backend.scoring)."
                )
            log.warning("sandbox runs untrusted code without %s (run_without_walls is set): %s", missing, why)
        return self

    def __exit__(self, *exc) -> None:
        for w in self._workers:
            w.stop()

    @property
    def isolation(self) -> list[str]:
        return self._workers[0].isolation

    @property
    def walls(self) -> str | None:
        """How the walls are up ("root" or "user-namespace"), or None when some are missing."""
        return next((mode for mode, layers in WALLS.items() if set(layers) <= set(self.isolation)), None)

    def run(self, jobs: Iterable[Job], desc: str | None = None) -> list[Execution]:
        jobs = list(jobs)
        results: list[Execution | None] = [None] * len(jobs)
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for item in enumerate(jobs):
            todo.put(item)
        bar = tqdm(total=len(jobs), desc=desc, disable=desc is None, unit="job")
        lock = threading.Lock()

        def drain(worker: _Worker) -> None:
            while True:
                try:
                    i, job = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[i] = worker.run(job)
                except Exception as e:  # noqa: BLE001 - a broken worker fails its job, never the run
                    log.warning("sandbox worker failed (%s); restarting it", e)
                    worker.stop()
                    worker.start()
                    results[i] = Execution.failed("sandbox_error", len(job.calls))
                with lock:
                    bar.update()

        threads = [threading.Thread(target=drain, args=(w,), daemon=True) for w in self._workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bar.close()
        return results  # type: ignore[return-value]
