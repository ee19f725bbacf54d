"""The sandbox worker: a pre-warmed process that forks one jailed child per answer.

Started by `sweetflow.backend.sandbox.pool.Sandbox` with a scrubbed environment. At start it puts up
its walls: new network and mount namespaces (no network at all; private tmpfs over every
world-writable directory, and over the project, the caller's working directory and the home
directories: the answer sees the interpreter, the standard library and site-packages, nothing of
ours), and a procfs in which an answer sees no process but its own. As root (of the host) it makes
them directly and gives its children a fresh unprivileged uid; as a normal user it makes them inside
an unprivileged user namespace, and gives each child a pid namespace of its own instead (see
`_isolate_in_user_namespace`). Where neither works it runs without them and says why.

It then reads jobs from stdin and, for each, forks a child that: starts its own session, enters its
walls, applies resource limits, closes every inherited descriptor, runs in an empty working
directory, executes the answer and then each test call under a per-call alarm, and streams one JSON
line per call to a pipe. The worker enforces the wall-clock bound, kills whatever the child left
behind and wipes its files.

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
from dataclasses import dataclass, field

from sweetflow.backend.sandbox import plaindata

# Modules answers commonly use, imported once here so that each forked child finds them warm.
import bisect, collections, copy, datetime, decimal, fractions, functools, heapq, itertools, math  # noqa: E401,F401
import operator, random, re, statistics, string, textwrap, typing, unicodedata  # noqa: E401,F401

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 0x1000, 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")
HOME_DIRS = ("/home", "/root")
ANSWER_NAME = "__answer__"
# The child may not start threads (RLIMIT_NPROC), so numerical libraries must stay single-threaded.
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
BASE_LAYERS = ("session", "rlimits", "empty-cwd", "scrubbed-env", "closed-fds")
USERNS_WORKDIR = "/tmp/work"

libc = ctypes.CDLL(None, use_errno=True)


class CallTimeout(BaseException):
    """Raised by the alarm; a BaseException so that `except Exception` in an answer can't eat it."""


@dataclass
class Jail:
    """How this worker walls off its children. `mode` is "root" (a fresh uid per worker, namespaces
    made as root), "user-namespace" (a normal user: namespaces of an unprivileged user namespace, and
    a pid namespace per child) or None (no walls: see `problem`)."""

    mode: str | None
    layers: list[str]
    problem: str | None = None
    # user-namespace mode: our ids, our own pid namespace, and what each child must expose again.
    ids: tuple[int, int] = (0, 0)
    pid_ns: int = -1
    reexpose: list[str] = field(default_factory=list)
    # root mode: the children's uid, and the private writable places to wipe after each; else the
    # directory that holds the children's working directories.
    uid: int | None = None
    private_dirs: list[str] = field(default_factory=list)
    scratch: str = ""


def _isolate() -> Jail:
    """Enter private namespaces if we may; return the walls now in force."""
    layers = list(BASE_LAYERS)
    if os.geteuid() == 0 and _initial_user_namespace():
        return _isolate_as_root(layers)
    return _isolate_in_user_namespace(layers)


def _initial_user_namespace() -> bool:
    """Root of the host, not of a container's user namespace (where other uids do not exist)."""
    with open("/proc/self/uid_map") as fh:
        return fh.read().split() == ["0", "0", "4294967295"]


def _isolate_as_root(layers: list[str]) -> Jail:
    if libc.unshare(CLONE_NEWNET | CLONE_NEWNS) != 0:
        return Jail(None, layers, f"unshare of network and mount namespaces: {os.strerror(ctypes.get_errno())}")
    layers.append("no-network")
    # Keep our mounts from propagating back to the host.
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return Jail(None, layers, f"private mounts: {os.strerror(ctypes.get_errno())}")
    _cover_and_expose(_hidden(), WRITABLE_DIRS)
    layers += ["private-tmp", "unprivileged-uid", "hidden-project"]
    # A procfs of our own in which an unprivileged uid sees only its own processes: the child sees
    # no other process or command line, while we (root) still see, and kill, all of its. A container
    # whose /proc has masked parts refuses a new one: the pool then says this layer is missing.
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
    except OSError as e:
        return Jail("root", layers, f"a procfs of our own: {e.strerror}")
    layers.append("hidden-processes")
    return Jail("root", layers)


def _isolate_in_user_namespace(layers: list[str]) -> Jail:
    """As a normal user: an unprivileged user namespace holding new network, mount and pid
    namespaces. This process stays outside, as the pool's handle on the worker, and a fork of it
    becomes the first process of the new pid namespace and does the work; when this one dies (the
    pool kills it), the kernel kills that one and every process under it.

    The children all share our uid, so none may see or signal another process: each child is the
    first process of a pid namespace of its own, with its own procfs, IPC namespace and fresh tmpfs
    over the writable places, and enters a user namespace of its own, where it holds no capability
    over any namespace we made (nor may it uncover what we covered: the kernel locks those mounts).
    """
    ids = (os.getuid(), os.getgid())
    problem = _probe_user_namespace(ids)
    if problem:
        return Jail(None, layers, problem)
    _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID, "user, mount, network and pid namespaces")
    _map_ids(ids)
    pid = os.fork()
    if pid:
        _relay(pid)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    # The writable places are covered per child (below), which then puts back what lies in them.
    reexpose = _cover_and_expose(_hidden(), ())
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY)
    jail = Jail("user-namespace", layers, None, ids, pid_ns, reexpose)
    # Every step a child takes is one we could not test here: run one, so that a refusal shows now.
    status = run_job(None, jail, os.open(os.devnull, os.O_RDWR))["exit_code"]
    if status != 0:
        return Jail(None, layers, "a child could not enter its namespaces (pid, mount, IPC, user)")
    jail.layers += ["user-namespace", "no-network", "private-tmp", "hidden-project", "own-pid-namespace", "hidden-processes"]
    return jail


def _probe_user_namespace(ids: tuple[int, int]) -> str | None:
    """Why this machine refuses us an unprivileged user namespace with mounts in it, or None. Tried
    in a throwaway child, so that a refusal halfway (Ubuntu's AppArmor lets the namespace be made
    but not used) leaves this process as it was."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID, "user, mount, network and pid namespaces")
            _map_ids(ids)
            _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
            _mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m")
        except OSError as e:
            os.write(w, str(e).encode())
            os._exit(1)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        message = fh.read().decode()
    _, status = os.waitpid(pid, 0)
    if status == 0:
        return None
    return (f"{message or f'exit status {status}'} (the sysctls that allow unprivileged user namespaces: "
            "user.max_user_namespaces, kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)")


def _relay(pid: int) -> None:
    """The outer process: wait for the worker inside the namespaces, then end as it ended."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)  # the pipes are the inner worker's: its death must close them
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


def _unshare(flags: int, what: str) -> None:
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), f"unshare of {what}: {os.strerror(ctypes.get_errno())}")


def _map_ids(ids: tuple[int, int]) -> None:
    """Map our own uid and gid into the user namespace we just made (the one mapping an unprivileged
    process may write)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{ids[0]} {ids[0]} 1"), ("gid_map", f"{ids[1]} {ids[1]} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def _hidden() -> list[str]:
    hidden = [d for d in os.environ.get("SWEETFLOW_SANDBOX_HIDE", "").split(os.pathsep) if d]
    return [*hidden, *HOME_DIRS]


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {source} on {target}: {os.strerror(e)}")


def _private_ancestor(path: str) -> str | None:
    """The topmost ancestor of `path` that other users may not enter (e.g. /root, mode 0700)."""
    parts = path.strip("/").split("/")
    for i in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:i])
        if not os.stat(ancestor).st_mode & 0o001:
            return ancestor
    return None


def _under(path: str, dirs) -> bool:
    return any(path == d or path.startswith(d + "/") for d in dirs)


def _cover_and_expose(hide: list[str], writable_dirs) -> list[str]:
    """Cover every shared writable place in `writable_dirs`, every directory closed to other users,
    and the `hide` directories (the project, the caller's working directory, home directories) with
    an empty tmpfs; then put back, read-only, just the directories on sys.path (interpreter, stdlib,
    venv) — never a hidden directory itself, so the project's own code and data stay out of the
    answer's reach even when it is on sys.path.

    The venv may lie under /tmp or inside the project, the interpreter under /root (pyenv, mode
    0700): each needed directory is held open (O_PATH) before it is covered, and bind-mounted back
    from that handle at its own path. Returns the needed directories that lie in the shared writable
    places not in `writable_dirs`, whose covers are yet to come.
    """
    all_writable = [d for d in WRITABLE_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    writable = [d for d in all_writable if d in writable_dirs]
    hide = sorted({os.path.realpath(d) for d in hide if os.path.isdir(d)} - {"/"})
    needed = sorted({os.path.realpath(p) for p in sys.path if os.path.isdir(p)} - set(hide))
    # A closed directory inside a covered writable one (/tmp/pytest-of-root) is gone with it.
    private = sorted({a for p in needed if (a := _private_ancestor(p)) and not _under(a, writable)})
    closed = [d for d in private + hide if not _under(os.path.dirname(d), writable + private + hide)]
    handles = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in needed if _under(p, writable + closed)}
    for d in writable:
        _mount("tmpfs", d, "tmpfs", 0, "size=64m,mode=1777")
    for d in closed:  # one inside another is gone with it
        _mount("tmpfs", d, "tmpfs", 0, "size=1m,mode=755")
    _expose(handles)
    for d in closed:
        _mount("none", d, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)
    for fd in handles.values():
        os.close(fd)
    return [p for p in needed if _under(p, all_writable) and not _under(p, writable)]


def _expose(handles: dict[str, int]) -> None:
    """Bind-mount each held directory back, read-only, at its own path."""
    for path, fd in handles.items():
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
        # A mount made by a user namespace may not drop the flags it inherited (nosuid, nodev, noexec).
        locked = os.statvfs(path).f_flag & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC)
        _mount("none", path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked, None)


def _enter_user_jail(jail: Jail) -> None:
    """In a child, first process of its own pid namespace: the rest of its walls (see
    `_isolate_in_user_namespace`)."""
    _unshare(CLONE_NEWNS | CLONE_NEWIPC, "mount and IPC namespaces")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    # Opened here: a bind mount's source must be a mount of this mount namespace, not the worker's.
    handles = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in jail.reexpose}
    covered = [d for d in WRITABLE_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    for d in covered:
        _mount("tmpfs", d, "tmpfs", 0, "size=64m,mode=1777")
    # The path down to a directory put back inside a fresh tmpfs (a venv or checkout under /tmp) is
    # made again there, owned by the child's own uid: it would be free to write beside the code it
    # imports. Each such path gets a tmpfs of its own, read-only once the code is mounted in it.
    skeletons = sorted(
        {f"{d}/{os.path.relpath(p, d).split('/')[0]}" for p in jail.reexpose for d in covered if _under(p, [d])}
        - set(jail.reexpose)
    )
    for top in skeletons:
        os.makedirs(top, exist_ok=True)
        _mount("tmpfs", top, "tmpfs", 0, "size=1m,mode=755")
    _expose(handles)
    for top in skeletons:
        locked = os.statvfs(top).f_flag & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC)  # as in _expose
        _mount("none", top, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked, None)
    os.mkdir(USERNS_WORKDIR, 0o700)
    _unshare(CLONE_NEWUSER, "a user namespace")
    _map_ids(jail.ids)
    # Not dumpable: its /proc files (environ, and its parent's view of it) become root's, as they do
    # for the root sandbox's children after the uid switch.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


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


def _child(job: dict | None, jail: Jail, workdir: str, result_fd: int, devnull: int) -> None:
    """Runs in the forked child; never returns. Without a job it only enters its walls (a check)."""
    try:
        os.setsid()
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        if jail.mode == "user-namespace":
            _enter_user_jail(jail)
        os.closerange(3, result_fd)
        os.closerange(result_fd + 1, 65536)
        os.chdir(workdir)
        if jail.mode == "root":
            # A fresh IPC namespace per answer: shared memory or message queues it creates die with it.
            _unshare(CLONE_NEWIPC, "an IPC namespace")
            os.setgroups([])
            os.setgid(jail.uid)
            os.setuid(jail.uid)
        if job is None:
            os._exit(0)
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


def run_job(job: dict | None, jail: Jail, devnull: int) -> dict:
    """Run one job in a fresh child; None: a child that only enters its walls and exits."""
    if jail.mode == "user-namespace":
        workdir = USERNS_WORKDIR  # the child makes it, in a /tmp of its own
    else:
        workdir = os.path.join(jail.scratch, "work")
        os.makedirs(workdir, exist_ok=True)
        if jail.mode == "root":
            os.chown(workdir, jail.uid, jail.uid)
            os.chmod(workdir, 0o700)
    r, w = os.pipe()
    if jail.mode == "user-namespace":
        _unshare(CLONE_NEWPID, "a pid namespace")  # the next child's, and its alone
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(job, jail, workdir, w, devnull)
    if jail.mode == "user-namespace" and libc.setns(jail.pid_ns, CLONE_NEWPID) != 0:
        raise OSError(ctypes.get_errno(), "setns back to our pid namespace")
    os.close(w)
    limits = job["limits"] if job else {"task_timeout_s": 10, "max_output_bytes": 0}
    deadline = time.monotonic() + float(limits["task_timeout_s"])
    data, problem = _read_results(r, deadline, int(limits["max_output_bytes"]))
    os.close(r)
    if jail.mode == "root":
        _kill_uid(jail.uid)
    else:
        # In a pid namespace of its own the child is its first process: its death takes every other.
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _, status = os.waitpid(pid, 0)
    signal_no = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if jail.mode != "user-namespace":
        shutil.rmtree(workdir, ignore_errors=True)
    if jail.private_dirs:
        _wipe(jail.private_dirs, jail.uid)
    return {
        "lines": data.decode("utf-8", "replace"),
        "problem": problem,
        "signal": signal_no,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    }


def main() -> None:
    sys.dont_write_bytecode = True
    jail = _isolate()
    if jail.mode == "root":
        jail.uid = int(os.environ["SWEETFLOW_SANDBOX_UID"])
        jail.scratch = "/tmp/sweetflow-sandbox"
        jail.private_dirs = [d for d in WRITABLE_DIRS if os.path.ismount(d)]
    elif jail.mode is None:
        jail.scratch = os.environ["SWEETFLOW_SANDBOX_SCRATCH"]
    stdin, stdout = sys.stdin.buffer, sys.stdout
    devnull = os.open(os.devnull, os.O_RDWR)
    # Objects that exist now are never collected: the collector then leaves their memory pages
    # alone in the children, which spares each child the copies that touching them would cost.
    gc.freeze()
    stdout.write(json.dumps({"ready": True, "isolation": jail.layers, "problem": jail.problem}) + "\n")
    stdout.flush()
    for line in stdin:
        job = json.loads(line)
        stdout.write(json.dumps(run_job(job, jail, devnull)) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
