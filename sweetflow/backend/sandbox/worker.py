"""The sandbox worker: a pre-warmed process that forks one jailed child per answer.

Started by `sweetflow.backend.sandbox.pool.Sandbox` with a scrubbed environment. At start, when it runs as root,
it enters new network and mount namespaces (no network at all, private tmpfs over every
world-writable directory, and over the project, the caller's working directory and the home
directories: the answer sees the interpreter, the standard library and site-packages, nothing of
ours; a procfs in which it sees no process but its own). It then reads jobs from stdin and, for each, forks a child that:
starts its own session, drops to a fresh unprivileged uid, applies resource limits, closes every
inherited descriptor, runs in an empty working directory, executes the answer and then each test
call under a per-call alarm, and streams one JSON line per call to a pipe. The worker enforces the
wall-clock bound, kills whatever the child left behind and wipes its files.

Protocol on stdin/stdout: one JSON object per line each way (see `Sandbox`). Standard library only,
plus `sweetflow.backend.sandbox.plaindata`.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import resource
import select
import shutil
import signal
import sys
import time

from sweetflow.backend.sandbox import plaindata

# Modules answers commonly use, imported once here so that each forked child finds them warm.
import bisect, collections, copy, datetime, decimal, fractions, functools, heapq, itertools, math  # noqa: E401,F401
import operator, random, re, statistics, string, textwrap, typing, unicodedata  # noqa: E401,F401

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 0x1000, 0x4000, 1 << 18
WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")
HOME_DIRS = ("/home", "/root")
ANSWER_NAME = "__answer__"
# The child may not start threads (RLIMIT_NPROC), so numerical libraries must stay single-threaded.
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class CallTimeout(BaseException):
    """Raised by the alarm; a BaseException so that `except Exception` in an answer can't eat it."""


def _isolate() -> list[str]:
    """Enter private namespaces if we may; return the isolation layers now in force."""
    layers = ["session", "rlimits", "empty-cwd", "scrubbed-env", "closed-fds"]
    if os.geteuid() != 0:
        return layers
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET | CLONE_NEWNS) != 0:
        return layers
    layers.append("no-network")
    # Keep our mounts from propagating back to the host.
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return layers
    hidden = [d for d in os.environ.get("SWEETFLOW_SANDBOX_HIDE", "").split(os.pathsep) if d]
    _cover_and_expose(libc, [*hidden, *HOME_DIRS])
    layers += ["private-tmp", "unprivileged-uid", "hidden-project"]
    # A procfs of our own in which an unprivileged uid sees only its own processes: the child sees
    # no other process or command line, while we (root) still see, and kill, all of its. A container
    # whose /proc has masked parts refuses a new one: the pool then warns that this layer is missing.
    try:
        _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
    except OSError:
        return layers
    layers.append("hidden-processes")
    return layers


def _mount(libc, source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {source} on {target}")


def _private_ancestor(path: str) -> str | None:
    """The topmost ancestor of `path` that other users may not enter (e.g. /root, mode 0700)."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:i])
        if not os.stat(ancestor).st_mode & 0o001:
            return ancestor
    return None


def _cover_and_expose(libc, hide: list[str]) -> None:
    """Cover every shared writable place, every directory closed to other users, and the `hide`
    directories (the project, the caller's working directory, home directories) with an empty tmpfs;
    then put back, read-only, just the directories on sys.path (interpreter, stdlib, venv) — never a
    hidden directory itself, so the project's own code and data stay out of the answer's reach even
    when it is on sys.path.

    The venv may lie under /tmp or inside the project, the interpreter under /root (pyenv, mode
    0700): each needed directory is held open (O_PATH) before it is covered, and bind-mounted back
    from that handle at its own path.
    """
    def under(path: str, dirs) -> bool:
        return any(path == d or path.startswith(d + "/") for d in dirs)

    writable = [d for d in WRITABLE_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    hide = sorted({os.path.realpath(d) for d in hide if os.path.isdir(d)} - {"/"})
    needed = sorted({os.path.realpath(p) for p in sys.path if os.path.isdir(p)} - set(hide))
    # A closed directory inside a covered writable one (/tmp/pytest-of-root) is gone with it.
    private = sorted({a for p in needed if (a := _private_ancestor(p)) and not under(a, writable)})
    covered = writable + private + hide
    handles = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in needed if under(p, covered)}
    for d in writable:
        _mount(libc, "tmpfs", d, "tmpfs", 0, "size=64m,mode=1777")
    for d in private + hide:
        if not under(os.path.dirname(d), writable + private + hide):  # one inside another is gone with it
            _mount(libc, "tmpfs", d, "tmpfs", 0, "size=1m,mode=755")
    for path, fd in handles.items():
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
        _mount(libc, "none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
        os.close(fd)


def _limits(job_limits: dict) -> None:
    mb = 1024 * 1024
    cpu = int(job_limits["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (job_limits["memory_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (job_limits["file_size_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (job_limits["open_files"],) * 2)
    # One process per uid: the child itself. No fork, no threads.
    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _on_alarm(signum, frame):
    raise CallTimeout()


def _child(job: dict, workdir: str, uid: int | None, result_fd: int, devnull: int) -> None:
    """Runs in the forked child; never returns."""
    try:
        os.setsid()
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(3, result_fd)
        os.closerange(result_fd + 1, 65536)
        os.chdir(workdir)
        if uid is not None:
            # A fresh IPC namespace per answer: shared memory or message queues it creates die with it.
            if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWIPC) != 0:
                os._exit(3)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        _limits(job["limits"])
        os.environ.clear()
        os.environ.update(CHILD_ENV, HOME=workdir, TMPDIR=workdir)
        random.seed()  # a fresh process would seed from the OS; don't inherit the worker's state
        out = os.fdopen(result_fd, "w", buffering=1)
    except BaseException:
        os._exit(3)

    timeout = float(job["limits"]["call_timeout_s"])
    signal.signal(signal.SIGALRM, _on_alarm)

    def emit(*fields: str) -> None:
        out.write("\t".join(fields) + "\n")

    def timed(fn):
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    namespace: dict = {"__name__": ANSWER_NAME, "__builtins__": __builtins__}
    # "function" (ColBench's evaluator): top-level names land in separate locals, which the answer's
    # own functions cannot see; the calls are evaluated where the evaluator evaluates them, in both.
    local = namespace if job.get("namespace", "module") == "module" else {}
    try:
        code = compile(job["code"], "<answer>", "exec")
        timed(lambda: exec(code, namespace, local))
    except SyntaxError:
        emit("compile", "error", "syntax")
        os._exit(0)
    except CallTimeout:
        emit("exec", "error", "timeout")
        os._exit(0)
    except BaseException as e:
        emit("exec", "error", _error_kind(e))
        os._exit(0)
    emit("exec", "ok")
    for i, call in enumerate(job["calls"]):
        try:
            text = timed(lambda: plaindata.dumps(eval(call, namespace, local)))
        except CallTimeout:
            emit(str(i), "error", "timeout")
        except BaseException as e:
            emit(str(i), "error", _error_kind(e))
        else:
            emit(str(i), "out", text)
    out.flush()
    os._exit(0)


def _error_kind(e: BaseException) -> str:
    if isinstance(e, MemoryError):
        return "memory"
    if isinstance(e, RecursionError):
        return "recursion"
    if isinstance(e, plaindata.EncodingError):
        return "unencodable"
    return "exception"


def _read_results(fd: int, deadline: float, max_bytes: int) -> tuple[bytes, str | None]:
    """Collect the child's result lines until it closes the pipe, runs out of time or says too much."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), "timeout"
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), None
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks), "output_too_large"
        chunks.append(chunk)


def _kill_uid(uid: int) -> None:
    """Kill every process owned by `uid` (the child and anything it managed to start)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                os.kill(int(name), signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass


def _wipe(paths: list[str], uid: int) -> None:
    """Remove what the child's uid left in the private writable places. Only its own entries:
    the directories we exposed again under them (a venv under /tmp) belong to root."""
    for d in paths:
        for entry in os.scandir(d):
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)


def run_job(job: dict, uid: int | None, scratch: str, private_dirs: list[str], devnull: int) -> dict:
    workdir = os.path.join(scratch, "work")
    os.makedirs(workdir, exist_ok=True)
    if uid is not None:
        os.chown(workdir, uid, uid)
        os.chmod(workdir, 0o700)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(job, workdir, uid, w, devnull)
    os.close(w)
    limits = job["limits"]
    deadline = time.monotonic() + float(limits["task_timeout_s"])
    data, problem = _read_results(r, deadline, int(limits["max_output_bytes"]))
    os.close(r)
    if uid is not None:
        _kill_uid(uid)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _, status = os.waitpid(pid, 0)
    signal_no = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    shutil.rmtree(workdir, ignore_errors=True)
    if private_dirs:
        _wipe(private_dirs, uid)
    return {
        "lines": data.decode("utf-8", "replace"),
        "problem": problem,
        "signal": signal_no,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    }


def main() -> None:
    sys.dont_write_bytecode = True
    layers = _isolate()
    private = "private-tmp" in layers
    uid = int(os.environ["SWEETFLOW_SANDBOX_UID"]) if "unprivileged-uid" in layers else None
    scratch = "/tmp/sweetflow-sandbox" if private else os.environ["SWEETFLOW_SANDBOX_SCRATCH"]
    private_dirs = [d for d in WRITABLE_DIRS if os.path.ismount(d)] if private else []
    stdin, stdout = sys.stdin.buffer, sys.stdout
    devnull = os.open(os.devnull, os.O_RDWR)
    # Objects that exist now are never collected: the collector then leaves their memory pages
    # alone in the children, which spares each child the copies that touching them would cost.
    gc.freeze()
    stdout.write(json.dumps({"ready": True, "isolation": layers}) + "\n")
    stdout.flush()
    for line in stdin:
        job = json.loads(line)
        stdout.write(json.dumps(run_job(job, uid, scratch, private_dirs, devnull)) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
