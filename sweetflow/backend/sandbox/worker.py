"""The sandbox worker: a pre-warmed process whose template forks one jailed child per answer.

Started by `sweetflow.backend.sandbox.pool.Sandbox` with a scrubbed environment. At start it puts up
its walls: new network and mount namespaces (no network at all), and a root of its own that is
empty but for what running Python needs, put back read-only at the same paths: the standard
library and the site-packages on sys.path, the interpreter and the system's shared libraries
(/usr/lib, /etc/ld.so.cache); then a minimal /dev (null, zero, full, random, urandom, shm), a procfs
of its own in which an answer sees no process but its own, and an empty /tmp. Nothing else of the
host is there: not the project, not a copy of it, not the file being scored, wherever they lie; the
mount table names only what was put back (`_build_root`). As root (of the host) the worker makes
these directly and gives its children a fresh unprivileged uid; as a normal user it makes them
inside an unprivileged user namespace, and gives each child a pid namespace of its own instead (see
`_isolate_in_user_namespace`). Where neither works it runs without them and says why.

Before it reads any job it forks a template: a process that has never held an answer's text or
results, and forks every child. Ahead of each job the template makes two pipes, hands this process
the job's write end and the results' read end (`socket.send_fds`), keeping neither, and forks the
child: the code goes from here to the child, the results from the child to here, and no child
starts with another answer in its memory. The child starts its own session, enters its walls (see
`_enter_walls`), closes every other descriptor, waits for its job, applies resource limits,
executes the answer and then each test call under a per-call alarm, and writes one line per call
back. This process enforces the wall-clock bound and kills whatever the child left behind; the
template reaps it and reports how it ended.

A child costs what it does after the fork, and mostly what it writes: every page of the template's
memory it writes is copied (about 400 pages an answer, at 1 to 4 µs each). So whatever is the same
for every child the template does once, before any fork (see `start_template`), the job comes as
marshal (one call of C to read), the results go straight to the pipe, and the template forks from
as small a memory as the worker can have.

Protocol on stdin/stdout: one JSON object per line each way (see `Sandbox`). Standard library only,
plus `sweetflow.backend.sandbox.plaindata`.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import json
import marshal
import os
import resource
import select
import signal
import socket
import stat
import struct
import sys
import time
from typing import NamedTuple

from sweetflow.backend.sandbox import plaindata

# Modules answers commonly use, imported once here so that each forked child finds them warm.
import bisect, collections, copy, datetime, decimal, fractions, functools, heapq, itertools, math  # noqa: E401,F401
import operator, random, re, statistics, string, textwrap, typing, unicodedata  # noqa: E401,F401

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    8,
    32,
    0x1000,
    0x4000,
    1 << 18,
)
MNT_DETACH = 2
# pivot_root has no libc wrapper: its system call number, by machine (41 is the generic table's).
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
# What the new root holds besides the code directories on sys.path: the places the dynamic linker
# looks for shared libraries (an answer's `import hashlib` loads libcrypto), its cache, and the
# devices a Python program may open. /lib and /lib64 are symlinks into /usr on merged systems, and
# are made again as such.
LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
LIBRARY_FILES = ("/etc/ld.so.cache",)
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {
    "fd": "/proc/self/fd",
    **{name: f"/proc/self/fd/{i}" for i, name in enumerate(("stdin", "stdout", "stderr"))},
}
# The places each child may write, fresh for each: a code directory under one (a venv under /tmp) is
# put back inside it.
CHILD_WRITABLE = ("/tmp", "/dev/shm")
STAGING = "/tmp"  # where the new root is built, before it becomes "/"
WORKDIR = "/tmp/work"  # the child's working directory, in its own /tmp
ANSWER_NAME = "__answer__"
# The child may not start threads (RLIMIT_NPROC), so numerical libraries must stay single-threaded.
CHILD_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
BASE_LAYERS = ("session", "rlimits", "empty-cwd", "scrubbed-env", "closed-fds")
# The walls by name, as the tasks stage records them (its metrics): "hidden-project" is the empty root,
# in which nothing of the host is in sight but what Python needs.
ROOT_LAYERS = ("no-network", "private-tmp", "unprivileged-uid", "hidden-project", "hidden-processes")
USER_LAYERS = ("user-namespace", "no-network", "private-tmp", "hidden-project", "own-pid-namespace", "hidden-processes")

libc = ctypes.CDLL(None, use_errno=True)


class CallTimeout(BaseException):
    """Raised by the alarm; a BaseException so that `except Exception` in an answer can't eat it."""


class Jail(NamedTuple):
    """How this worker walls off its children. `mode` is "root" (a fresh uid per worker, namespaces
    made as root), "user-namespace" (a normal user: namespaces of an unprivileged user namespace, and
    a pid namespace per child) or None (no walls: see `problem`)."""

    mode: str | None
    layers: list[str]
    problem: str | None = None
    # user-namespace mode: our ids, and our own pid namespace.
    ids: tuple[int, int] = (0, 0)
    pid_ns: int = -1
    # root mode: the children's uid.
    uid: int | None = None
    # user-namespace mode: the code directories that lie in a child's writable places, put back in each.
    reexpose: tuple[str, ...] = ()
    # Without walls: the directory that holds the children's working directories.
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
    try:
        # A procfs of our own in which an unprivileged uid sees only its own processes: the child sees
        # no other process or command line, while we (root) still see, and kill, all of its. A
        # container whose /proc has masked parts refuses a new one: the pool then refuses to start.
        _writable_places(_build_root("hidepid=invisible"))
    except OSError as e:
        return Jail(None, layers, f"a root of our own: {e.strerror}")
    return Jail("root", [*layers, *ROOT_LAYERS])


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
    reexpose = _build_root(None)
    pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY)
    return Jail("user-namespace", [*layers, *USER_LAYERS], None, ids, pid_ns, reexpose=reexpose)


def _probe_user_namespace(ids: tuple[int, int]) -> str | None:
    """Why this machine refuses us an unprivileged user namespace with mounts in it, or None. Tried
    in a throwaway child, so that a refusal halfway (Ubuntu's AppArmor lets the namespace be made
    but not used) leaves this process as it was."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            _unshare(
                CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID, "user, mount, network and pid namespaces"
            )
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
    return (
        f"{message or f'exit status {status}'} (the sysctls that allow unprivileged user namespaces: "
        "user.max_user_namespaces, kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)"
    )


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


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {source} on {target}: {os.strerror(e)}")


def _under(path: str, dirs) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def _code_dirs() -> list[str]:
    """The directories on sys.path that hold Python's own modules: the standard library (under the
    interpreter's base prefix) and site-packages. Never the project, nor a directory above it, even
    when it is on sys.path (PYTHONPATH, a .pth file): its code regenerates the tasks."""
    project = os.path.realpath(os.environ.get("SWEETFLOW_SANDBOX_PROJECT", "/nonexistent"))
    bases = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)} - {"/"}
    found = []
    for entry in sys.path:
        path = os.path.realpath(entry or ".")
        if not os.path.exists(path) or _under(project, [path]):
            continue
        if _under(path, bases) or os.path.basename(path) in ("site-packages", "dist-packages"):
            found.append(path)
    return found


def _put_back() -> tuple[list[str], dict[str, str]]:
    """What the new root holds of the host (directories and files, by real path) and the symlinks
    made again in it. Also points sys.path at the real paths of the code directories, and drops the
    rest of it: those are all that exist in the new root."""
    code = _code_dirs()
    # Entries that are no directory (an editable install's path hook) stay as they are.
    entries = [(e, os.path.realpath(e or ".")) for e in sys.path]
    sys.path[:] = [
        real if os.path.exists(real) else e for e, real in entries if real in code or not os.path.exists(real)
    ]
    sys.path_importer_cache.clear()
    links = {d: os.readlink(d) for d in LIBRARY_DIRS if os.path.islink(d)}
    libraries = {os.path.realpath(d) for d in LIBRARY_DIRS if os.path.isdir(d)}
    files = {os.path.realpath(sys.executable), *(f for f in LIBRARY_FILES if os.path.isfile(f))}
    paths = sorted({*code, *libraries, *files})
    # One inside another comes back with it.
    return [p for i, p in enumerate(paths) if not _under(p, paths[:i])], links


def _build_root(proc_options: str | None) -> tuple[str, ...]:
    """Build the children's root in a tmpfs and make it ours (pivot_root): the code directories and
    libraries of `_put_back`, read-only; a minimal /dev; a procfs of our pid namespace; an empty /tmp.
    The host's root is then detached, so that nothing else of it is reachable or in the mount table.
    Returns what lies in the children's writable places (to put back in each child)."""
    paths, links = _put_back()
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)  # nothing we mount propagates to the host
    # Held open before anything is covered: a venv may lie under /tmp, where the new root is built.
    handles = {p: os.open(p, os.O_PATH) for p in paths}
    devices = {f"/dev/{d}": os.open(f"/dev/{d}", os.O_PATH) for d in DEVICES}
    new = STAGING
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    try:
        for link, target in links.items():
            os.makedirs(os.path.dirname(new + link), mode=0o755, exist_ok=True)
            os.symlink(target, new + link)
        for d in ("/proc", "/dev", "/tmp"):
            os.makedirs(new + d, mode=0o755, exist_ok=True)
        _expose(handles, new)
        _mount("tmpfs", new + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
        os.mkdir(new + "/dev/shm", 0o755)
        for name, target in DEV_LINKS.items():
            os.symlink(target, f"{new}/dev/{name}")
        _expose(devices, new, read_only=False)  # a device node is written through any mount
        _read_only(new + "/dev")
        _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, proc_options)
        _read_only(new)
    finally:
        for fd in (*handles.values(), *devices.values()):
            os.close(fd)
    os.chdir(new)
    machine = os.uname().machine
    if machine not in SYS_PIVOT_ROOT:
        raise OSError(errno.ENOSYS, f"pivot_root: no system call number known for {machine}")
    if libc.syscall(SYS_PIVOT_ROOT[machine], b".", b".") != 0:
        raise OSError(ctypes.get_errno(), f"pivot_root: {os.strerror(ctypes.get_errno())}")
    # The host's root now lies under ours, at the same place: detach it, and it is gone.
    if libc.umount2(b".", MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), f"detaching the host's root: {os.strerror(ctypes.get_errno())}")
    os.chdir("/")
    return tuple(p for p in paths if _under(p, CHILD_WRITABLE))


def _expose(handles: dict[str, int], root: str = "", read_only: bool = True) -> None:
    """Bind-mount each held directory or file back, at its own path under `root`."""
    for path, fd in handles.items():
        target = root + path
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, None)
        if read_only:
            _read_only(target)


def _read_only(target: str) -> None:
    # A mount made by a user namespace may not drop the flags it inherited (nosuid, nodev, noexec).
    locked = os.statvfs(target).f_flag & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC)
    _mount("none", target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked, None)


def _enter_walls(jail: Jail) -> None:
    """In a child, before its job: an IPC namespace of its own, and (a normal user's sandbox, where
    the child is the first process of its own pid namespace) its own procfs, /tmp and /dev/shm and
    a user namespace of its own. Root's sandbox shares the worker's /tmp and /dev/shm, wiped after
    each child (a mount namespace per child costs more than the answer), and the child takes its
    uid once its job has come (`_drop_to_uid`)."""
    if jail.mode == "root":
        _unshare(CLONE_NEWIPC, "an IPC namespace")
        return
    _unshare(CLONE_NEWNS | CLONE_NEWIPC, "mount and IPC namespaces")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    _writable_places(jail.reexpose)
    os.mkdir(WORKDIR, 0o700)
    _unshare(CLONE_NEWUSER, "a user namespace")
    _map_ids(jail.ids)
    # Not dumpable: its /proc files (environ, and its parent's view of it) become root's, as they do
    # for the root sandbox's children after the uid switch.
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _drop_to_uid(uid: int) -> None:
    """Root's sandbox: the child becomes the children's uid only once its job has come, for by then
    the worker has killed whatever the previous child left under that uid; until then it waits as
    root, out of every answer's reach."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def _writable_places(reexpose: tuple[str, ...]) -> None:
    """A fresh tmpfs over each place a child may write, with the code directories that lie in them
    put back (`reexpose`: a venv or checkout under /tmp)."""
    # Opened here: a bind mount's source must be a mount of this mount namespace, not the worker's.
    handles = {p: os.open(p, os.O_PATH) for p in reexpose}
    for d in CHILD_WRITABLE:
        _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    # The path down to what is put back would be made again in the fresh tmpfs, owned by whoever
    # made it: a child would be free to write beside the code it imports. Each such path gets a
    # tmpfs of its own, read-only once the code is mounted in it.
    skeletons = sorted(
        {f"{d}/{os.path.relpath(p, d).split('/')[0]}" for p in reexpose for d in CHILD_WRITABLE if _under(p, [d])}
        - set(reexpose)
    )
    for top in skeletons:
        os.makedirs(top, exist_ok=True)
        _mount("tmpfs", top, "tmpfs", 0, "size=1m,mode=755")
    _expose(handles)
    for top in skeletons:
        _read_only(top)
    for fd in handles.values():
        os.close(fd)


def _wipe(uid: int) -> None:
    """Remove what the child's uid left in the writable places (root's sandbox). Only its own
    entries: the directories put back under them (a venv under /tmp) belong to root."""
    for d in CHILD_WRITABLE:
        for entry in os.scandir(d):
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            if entry.is_dir(follow_symlinks=False):
                try:
                    os.rmdir(entry.path)  # the working directory, most often left empty
                except OSError:
                    _remove_tree(entry.path)
            else:
                os.unlink(entry.path)


def _remove_tree(path: str) -> None:
    # shutil (and the compression modules it loads) only once the template is forked: every module
    # in our memory then is in each child's, and makes its fork and exit slower.
    import shutil

    shutil.rmtree(path, ignore_errors=True)


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


def _read_job(fd: int) -> bytes:
    """The job the worker writes to the child's pipe: its request as marshal, None's for a check that
    the walls go up, nothing when the worker is gone."""
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _child(jail: Jail, job_fd: int, result_fd: int, workdir: str) -> None:
    """Runs in the forked child; never returns. Without a job it only enters its walls (a check).

    All that is the same for every child (its standard streams on /dev/null, its environment, the
    alarm's handler) the template set up once, before forking it: each child only does what is its
    own, for every Python object it touches costs it a copied page of the template's memory."""
    try:
        os.setsid()
        if jail.mode is not None:
            _enter_walls(jail)
        low, high = sorted((job_fd, result_fd))
        os.closerange(3, low)
        os.closerange(low + 1, high)
        os.closerange(high + 1, 65536)
        text = _read_job(job_fd)  # the template forks each child ahead of its job: it waits here
        if not text:
            os._exit(0)
        job = marshal.loads(text)
        if jail.mode == "root":
            _drop_to_uid(jail.uid)
        os.chdir(workdir)
        if job is None:
            os._exit(0)
        _limits(job["limits"])
        random.seed()  # a fresh process would seed from the OS; don't inherit the worker's state
    except BaseException:
        os._exit(3)

    timeout = float(job["limits"]["call_timeout_s"])

    def emit(*fields: str) -> None:
        # One write per record, before the next call runs: what an answer's later call kills is kept.
        # The records are ASCII (plaindata's JSON escapes everything else).
        _write_all(result_fd, ("\t".join(fields) + "\n").encode())

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
    os._exit(0)


def _error_kind(e: BaseException) -> str:
    if isinstance(e, MemoryError):
        return "memory"
    if isinstance(e, RecursionError):
        return "recursion"
    if isinstance(e, plaindata.EncodingError):
        return "unencodable"
    return "exception"


STATUS = struct.Struct("i")
# How often the worker empties the results pipe of a child still running (see `_await_child`).
DRAIN_S = 0.01


def _await_child(
    fd: int, template: socket.socket, deadline: float, max_bytes: int
) -> tuple[bytes, str | None, int | None]:
    """Wait for the child's end and collect its result records: (records, problem, its status, or
    None if it is still running). No record wakes us: the template's report of the child's end does,
    and in between we empty the pipe every DRAIN_S, so that a child that fills it goes on, and one
    that closes it (the end of its job), runs out of time or says too much is caught."""
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), "timeout", None
        ended = select.select([template], [], [], min(left, DRAIN_S))[0]
        status = STATUS.unpack(_recv_exactly(template, STATUS.size))[0] if ended else None
        state = _drain(fd, chunks, max_bytes)
        if state == "too_large":
            return b"".join(chunks), "output_too_large", status
        if ended or state == "closed":
            return b"".join(chunks), None, status


def _drain(fd: int, chunks: list[bytes], max_bytes: int) -> str:
    """Read what the (non-blocking) pipe holds into `chunks`: "open", "closed" or "too_large" (past
    `max_bytes`; the chunk that went past them is left out)."""
    size = sum(map(len, chunks))
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return "open"
        if not chunk:
            return "closed"
        size += len(chunk)
        if size > max_bytes:
            return "too_large"
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


def start_template(jail: Jail, devnull: int) -> socket.socket:
    """Fork the template, which forks every child (see the module's docstring); return our end of
    the socket it hands each child's pipes over. Called before any job is read."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.fork():
        theirs.close()
        return ours
    try:
        ours.close()
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The pool's pipes are the worker's (its death must close them), and the children write
        # nowhere but their results pipe: what they print goes to /dev/null.
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        workdir = WORKDIR if jail.mode is not None else os.path.join(jail.scratch, "work")
        os.environ.clear()
        os.environ.update(CHILD_ENV, HOME=workdir, TMPDIR=workdir)
        signal.signal(signal.SIGALRM, _on_alarm)
        _template(theirs, jail, workdir)
    finally:
        os._exit(0)


def _template(sock: socket.socket, jail: Jail, workdir: str) -> None:
    """Hand the worker the write end of the next child's job pipe and the read end of its results
    pipe, fork the child, send the worker its pid, then how it ended; then the next. Each child is
    forked while the worker answers the pool for the one before, and waits for its job. The pipes go
    over before the fork: every page of ours that we write while a child lives is copied."""
    while True:
        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        socket.send_fds(sock, [b"p"], [job_w, result_r])
        os.close(job_w)
        os.close(result_r)
        if jail.mode == "user-namespace":
            _unshare(CLONE_NEWPID, "a pid namespace")  # the next child's, and its alone
        pid = os.fork()
        if pid == 0:
            _child(jail, job_r, result_w, workdir)  # which closes every descriptor but these two
        if jail.mode == "user-namespace" and libc.setns(jail.pid_ns, CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "setns back to our pid namespace")
        os.close(job_r)
        os.close(result_w)
        try:
            sock.sendall(STATUS.pack(pid))
            _, status = os.waitpid(pid, 0)
            sock.sendall(STATUS.pack(status))
        except OSError:  # the worker is gone
            return


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the sandbox's template process is gone")
        data += chunk
    return data


def run_job(line: bytes | None, jail: Jail, template: socket.socket) -> dict:
    """Run one job (its JSON line) in a fresh child of the template; None: a child that only enters
    its walls and exits."""
    job = json.loads(line) if line else None
    if jail.mode is None:
        workdir = os.path.join(jail.scratch, "work")
        os.makedirs(workdir, exist_ok=True)
    elif jail.mode == "root":
        os.mkdir(WORKDIR, 0o700)
        os.chown(WORKDIR, jail.uid, jail.uid)
    message, fds, _, _ = socket.recv_fds(template, 1, 2)
    if not message or len(fds) != 2:
        raise ConnectionError("the sandbox's template process is gone")
    job_w, result_r = fds
    limits = job["limits"] if job else {"task_timeout_s": 10, "max_output_bytes": 0}
    deadline = time.monotonic() + float(limits["task_timeout_s"])
    try:
        # marshal, which the child reads in one call of C, where json's decoder would run Python code.
        # The child may not be forked yet: the pipe holds the job until it reads it.
        _write_all(job_w, marshal.dumps(job))
    except BrokenPipeError:  # the child died entering its walls: its status says so
        pass
    finally:
        os.close(job_w)
    (pid,) = STATUS.unpack(_recv_exactly(template, STATUS.size))  # sent once the child was forked
    data, problem, status = _await_child(result_r, template, deadline, int(limits["max_output_bytes"]))
    os.close(result_r)
    if jail.mode == "root":
        _kill_uid(jail.uid)
        _wipe(jail.uid)
    else:
        # In a pid namespace of its own the child is its first process: its death takes every other.
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if status is None:
        (status,) = STATUS.unpack(_recv_exactly(template, STATUS.size))
    signal_no = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if jail.mode is None:
        _remove_tree(workdir)
    return {
        "lines": data.decode("utf-8", "replace"),
        "problem": problem,
        "signal": signal_no,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
    }


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main() -> None:
    sys.dont_write_bytecode = True
    jail = _isolate()
    if jail.mode == "root":
        jail = jail._replace(uid=int(os.environ["SWEETFLOW_SANDBOX_UID"]))
    elif jail.mode is None:
        jail = jail._replace(scratch=os.environ["SWEETFLOW_SANDBOX_SCRATCH"])
    stdin, stdout = sys.stdin.buffer, sys.stdout
    devnull = os.open(os.devnull, os.O_RDWR)
    # Objects that exist now are never collected: the collector then leaves their memory pages
    # alone in the children, which spares each child the copies that touching them would cost.
    gc.freeze()
    template = start_template(jail, devnull)
    layers, problem = jail.layers, jail.problem
    if jail.mode is not None and run_job(None, jail, template)["exit_code"] != 0:
        # Every step a child takes is one we could not test here: run one, so that a refusal shows now.
        layers, problem = list(BASE_LAYERS), "a child could not enter its walls (mount, IPC, uid or user namespace)"
    stdout.write(json.dumps({"ready": True, "isolation": layers, "problem": problem}) + "\n")
    stdout.flush()
    for line in stdin:
        stdout.write(json.dumps(run_job(line, jail, template)) + "\n")
        stdout.flush()


if __name__ == "__main__":
    main()
