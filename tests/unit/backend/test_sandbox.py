"""The sandbox against hostile answers, with real processes: each answer must score nothing, leave
nothing behind and leave the pool working, in a sandbox run by root and in one run by a normal user.
Then the refusal to run without walls, and the ordinary duties: passing, timeouts, imports, order.

Hostile answers return whatever their attack yields, so an attack that the sandbox contains shows up
as a status or call error; every test compares against the expected output `1`.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import subprocess
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from string import Template

import pytest

from sweetflow.backend.sandbox import plaindata
from sweetflow.backend.sandbox.pool import PROJECT_ROOT, Job, Sandbox
from sweetflow.backend.scoring import check_references, passes_test, score_answers
from tests.support.nonroot import NonRoot
from tests.support.params import sandbox_params

SECRET = f"sk-sweetflow-test-{uuid.uuid4().hex}"
EXPECTED = plaindata.dumps(1)
# Small bounds keep the endless answers quick; the wall-clock bound must exceed the per-call one.
FAST_LIMITS = {"workers": 1, "call_timeout_s": 0.3, "task_timeout_s": 1.0}
FAST = sandbox_params(**FAST_LIMITS)
IPC_RMID = 0


@dataclass(frozen=True)
class Hostile:
    """An answer, the test calls made on it, and the outcome we expect from the sandbox."""

    name: str
    code: str  # a Template: $marker, $repo, $host_cwd and $port are filled in
    status: str
    call_errors: tuple[str | None, ...]
    calls: tuple[str, ...] = ("f(1)",)
    # The outcome where it differs when a normal user's sandbox runs it: there the answer is the first
    # process of a pid namespace of its own, whose parent lies outside it (getppid() is 0), and which
    # nothing inside it may kill, itself included.
    in_user_namespace: tuple[str, tuple[str | None, ...]] | None = None
    # Sandbox limits of this case over FAST_LIMITS.
    limits: tuple[tuple[str, float], ...] = ()

    def expected(self, walls: str | None) -> tuple[str, tuple[str | None, ...]]:
        if walls == "user-namespace" and self.in_user_namespace:
            return self.in_user_namespace
        return self.status, self.call_errors


def hostile(name, code, status, *call_errors, calls=("f(1)",), in_user_namespace=None, limits=()):
    return pytest.param(
        Hostile(name, textwrap.dedent(code), status, call_errors, calls, in_user_namespace, limits), id=name
    )


HOSTILE = [
    hostile(
        "fork bomb at call time",
        """
        import os
        def f(x):
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        """,
        "ok",
        "timeout",
    ),
    hostile(
        "fork bomb at import time",
        """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """,
        "exec_timeout",
        "not_run",
    ),
    hostile("endless loop at import time", "while True:\n    pass\n", "exec_timeout", "not_run"),
    hostile("endless loop at call time", "def f(x):\n    while True:\n        pass\n", "ok", "timeout"),
    hostile(
        # Only the worker's wall-clock bound can stop this one.
        "endless loop that swallows the alarm",
        """
        def f(x):
            while True:
                try:
                    while True:
                        x += 1
                except BaseException:
                    pass
        """,
        "timeout",
        "not_run",
    ),
    hostile(
        # bytes(n) comes from calloc, untouched: the address-space limit stops it within the call time.
        "memory bomb",
        """
        def f(x):
            hoard = []
            while True:
                hoard.append(bytes(10**8))
        """,
        "ok",
        "memory",
    ),
    # Writes inside the jail may succeed (its /tmp is private); the host must not see them.
    hostile(
        "file in /tmp",
        "def f(x):\n    with open('/tmp/$marker', 'w') as fh:\n        fh.write('x')\n",
        "ok",
        None,
    ),
    hostile(
        "file in /dev/shm",
        "def f(x):\n    with open('/dev/shm/$marker', 'w') as fh:\n        fh.write('x')\n",
        "ok",
        None,
    ),
    hostile(
        "file in the repository",
        "def f(x):\n    with open('$repo/$marker', 'w') as fh:\n        fh.write('x')\n",
        "ok",
        "exception",
    ),
    hostile(
        "file in the host's working directory",
        "def f(x):\n    with open('$host_cwd/$marker', 'w') as fh:\n        fh.write('x')\n",
        "ok",
        "exception",
    ),
    # The project's code regenerates every task from params.yaml in a fraction of a second, so an
    # answer that could read either could look up its own reference: both must be out of sight.
    hostile(
        "reads the project's params.yaml", "def f(x):\n    return open('$repo/params.yaml').read()\n", "ok", "exception"
    ),
    hostile(
        "imports the project's task generator",
        """
        def f(x):
            import sweetflow.backend.tasks.procedural
            return 1
        """,
        "ok",
        "exception",
    ),
    hostile(
        # What may show is only the path down to a venv inside the project (its site-packages).
        "lists the project directory",
        """
        import os
        def f(x):
            return 1 if os.path.isdir('$repo') and (
                {'params.yaml', 'sweetflow', 'data'} & set(os.listdir('$repo'))) else 0
        """,
        "ok",
        None,
    ),
    # Other processes and their command lines (a stage's own names its task files): none in sight.
    hostile(
        "lists the host's processes",
        "import os\ndef f(x):\n    return 1 if [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()] else 0\n",  # noqa: E501
        "ok",
        None,
    ),
    hostile(
        "reads the worker's command line",
        "import os\ndef f(x):\n    return 1 if open(f'/proc/{os.getppid()}/cmdline').read() else 0\n",
        "ok",
        "exception",
    ),
    hostile(
        "huge file in its own working directory",
        "def f(x):\n    with open('$marker', 'wb') as fh:\n        fh.write(bytes(64 << 20))\n",
        "ok",
        "exception",
    ),
    hostile(
        "subprocess.run",
        "import subprocess\ndef f(x):\n    return subprocess.run(['touch', '/tmp/$marker']).returncode\n",
        "ok",
        "exception",
    ),
    hostile("os.system", "import os\ndef f(x):\n    return os.system('touch /tmp/$marker')\n", "ok", None),
    # In a normal user's sandbox getppid() is 0: kill(0) aims at the answer's own group, and misses.
    hostile(
        "kill the worker",
        "import os\ndef f(x):\n    return os.kill(os.getppid(), 9)\n",
        "ok",
        "exception",
        in_user_namespace=("ok", (None,)),
    ),
    hostile(
        "kill the worker's process group",
        "import os\ndef f(x):\n    return os.killpg(os.getpgid(os.getppid()), 9)\n",
        "ok",
        "exception",
    ),
    # kill(-1) reaches every process of the caller's uid but itself: nobody, as each worker has its own.
    # In its own pid namespace there is no other process at all, and kill(-1) says so.
    hostile(
        "kill every process it may",
        "import os\ndef f(x):\n    return os.kill(-1, 9)\n",
        "ok",
        None,
        in_user_namespace=("ok", ("exception",)),
    ),
    hostile(
        "kill its own process group",
        "import os\ndef f(x):\n    return os.killpg(0, 9)\n",
        "killed_by_signal",
        "not_run",
        in_user_namespace=("ok", (None,)),
    ),
    hostile("segfault", "import ctypes\ndef f(x):\n    return ctypes.string_at(0)\n", "killed_by_signal", "not_run"),
    hostile(
        "huge returned string",
        "def f(x):\n    return 'x' * 10**7\n",
        "output_too_large",
        None,
        # 0.1 s on an idle machine, but over the call's 0.3 s and the task's 1 s on a busy one (CI, twice):
        # time limits are not what this case is about.
        limits=(("call_timeout_s", 5.0), ("task_timeout_s", 10.0)),
    ),
    hostile(
        # Forged result records on stdout/stderr must count for nothing: those go to /dev/null.
        "gigabytes on stdout and stderr",
        """
        import os
        def f(x):
            forged = b'0\\tout\\t1\\n' * 10**5  # 800 kB, 2,500 times: 2 GB to each
            for _ in range(2500):
                os.write(1, forged)
                os.write(2, forged)
        """,
        "ok",
        None,
    ),
    hostile("returns os.environ", "import os\ndef f(x):\n    return dict(os.environ)\n", "ok", None),
    hostile("reads /proc/self/environ", "def f(x):\n    return open('/proc/self/environ').read()\n", "ok", "exception"),
    hostile(
        "reads the worker's environ",
        "import os\ndef f(x):\n    return open(f'/proc/{os.getppid()}/environ').read()\n",
        "ok",
        "exception",
    ),
    hostile("reads /proc/1/environ", "def f(x):\n    return open('/proc/1/environ').read()\n", "ok", "exception"),
    hostile(
        "reads every environ it can",
        """
        import glob
        def f(x):
            found = []
            for path in glob.glob('/proc/[0-9]*/environ'):
                try:
                    found.append(open(path, 'rb').read())
                except OSError:
                    pass
            return found
        """,
        "ok",
        None,
    ),
    hostile(
        "connects to a loopback server",
        """
        import socket
        def f(x):
            return socket.create_connection(('127.0.0.1', $port), timeout=0.2).fileno()
        """,
        "ok",
        "exception",
    ),
    hostile(
        "object equal to everything",
        "class Yes:\n    def __eq__(self, other):\n        return True\ndef f(x):\n    return Yes()\n",
        "ok",
        None,
    ),
    hostile(
        "int subclass equal to everything",
        """
        class Yes(int):
            def __eq__(self, other):
                return True
            __hash__ = int.__hash__
        def f(x):
            return Yes(0)
        """,
        "ok",
        None,
    ),
    hostile(
        "os._exit midway",
        "import os\ndef f(x):\n    if x == 1:\n        os._exit(0)\n    return x\n",
        "exited_early",
        None,
        "not_run",
        calls=("f(2)", "f(1)"),
    ),
    # The worker takes the closed pipe for the end of the job and kills what is left of it.
    hostile(
        "closes the result pipe",
        "import os, time\ndef f(x):\n    os.closerange(3, 1024)\n    time.sleep(5)\n    return 1\n",
        "killed_by_signal",
        "not_run",
    ),
    hostile(
        "returns a signalling NaN",
        "from decimal import Decimal\ndef f(x):\n    return Decimal('sNaN')\n",
        "ok",
        None,
    ),
    hostile(
        # The answer owns its process, so it can write any record to the result pipe.
        "forges a malformed result record",
        """
        import os
        def f(x):
            for fd in range(3, 32):
                try:
                    os.write(fd, b'0\\tout\\t{"__t":"fraction","v":[1,0]}\\n')
                except OSError:
                    pass
            os._exit(0)
        """,
        "ok",
        None,
    ),
    hostile(
        "SysV shared memory segment",
        "import ctypes\ndef f(x):\n    return {'shmid': ctypes.CDLL(None).shmget(0, 1 << 20, 0o1600)}\n",
        "ok",
        None,
    ),
    hostile(
        "POSIX message queue",
        """
        import ctypes
        def f(x):
            return {'mqd': ctypes.CDLL('librt.so.1').mq_open(b'/$marker', 0o100 | 0o2, 0o600, None)}  # O_CREAT|O_RDWR
        """,
        "ok",
        None,
    ),
]


@dataclass
class Host:
    """What a hostile answer must not reach: a secret in the environment, files, a listening socket."""

    marker: str
    cwd: str
    scratch: str
    server: socket.socket

    def fill(self, code: str) -> str:
        port = self.server.getsockname()[1]
        return Template(code).substitute(marker=self.marker, repo=PROJECT_ROOT, host_cwd=self.cwd, port=port)

    def files_left(self) -> list[str]:
        places = ["/tmp", "/var/tmp", "/dev/shm", str(PROJECT_ROOT), self.cwd]
        marked = [os.path.join(d, n) for d in places for n in os.listdir(d) if self.marker in n]
        return marked + [os.path.join(self.scratch, n) for n in os.listdir(self.scratch)]

    def accepted_a_connection(self) -> bool:
        try:
            self.server.accept()[0].close()
        except BlockingIOError:
            return False
        return True


@pytest.fixture(scope="module")
def server():
    with socket.create_server(("127.0.0.1", 0)) as sock:
        sock.setblocking(False)
        yield sock


@pytest.fixture
def host(tmp_path, monkeypatch, server, user, nonroot) -> Host:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    base = tmp_path
    if user == "non-root":
        if isinstance(nonroot, str):
            pytest.skip(nonroot)
        base = Path(tempfile.mkdtemp(prefix="sweetflow-nonroot-host-"))  # tmp_path is closed to others
        base.chmod(0o755)
    cwd, scratch = base / "cwd", base / "scratch"
    cwd.mkdir()
    scratch.mkdir()
    if user == "non-root":
        nonroot.give(str(cwd))
        nonroot.give(str(scratch))
    monkeypatch.chdir(cwd)
    # The sandbox keeps its own scratch under tempfile's directory; point it where we can watch it.
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    yield Host(f"sweetflow-hostile-{uuid.uuid4().hex[:12]}", str(cwd), str(scratch), server)
    if base != tmp_path:
        shutil.rmtree(base)


def _proc_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def sandbox_workers() -> dict[int, int]:
    """Our running sandbox workers: pid -> the uid they give their children (from their environment)."""
    workers = {}
    for pid in _proc_pids():
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            if ppid != os.getpid():
                continue
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if b"=" in item)
        except (OSError, ValueError, IndexError):
            continue
        if b"SWEETFLOW_SANDBOX_UID" in env:
            workers[pid] = int(env[b"SWEETFLOW_SANDBOX_UID"])
    return workers


def processes_of(uids: set[int]) -> list[int]:
    alive = []
    for pid in _proc_pids():
        try:
            if os.stat(f"/proc/{pid}").st_uid in uids:
                alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


def ipc_of(uids: set[int]) -> set[tuple[str, int]]:
    """The SysV IPC objects owned by `uids`, as (kind, id)."""
    found = set()
    for kind in ("shm", "msg", "sem"):
        with open(f"/proc/sysvipc/{kind}") as fh:
            header, *rows = [line.split() for line in fh]
        found |= {(kind, int(row[1])) for row in rows if int(row[header.index("uid")]) in uids}
    return found


def remove_ipc_of(uids: set[int], keep: set[tuple[str, int]] = frozenset()) -> list[str]:
    """Remove the SysV IPC objects owned by `uids`, but those in `keep`; return what was removed."""
    libc = ctypes.CDLL(None, use_errno=True)
    removers = {"shm": libc.shmctl, "msg": libc.msgctl, "sem": lambda ident, cmd, _: libc.semctl(ident, 0, cmd)}
    found = sorted(ipc_of(uids) - keep)
    for kind, ident in found:
        removers[kind](ident, IPC_RMID, None)
    return [f"{kind} {ident}" for kind, ident in found]


def remove_message_queue(name: str) -> list[str]:
    """Remove the POSIX message queue `/name` if there is one; return it if it was there."""
    found = ctypes.CDLL("librt.so.1").mq_unlink(f"/{name}".encode()) == 0
    return [f"mqueue /{name}"] if found else []


def normal_job_passes(sb: Sandbox) -> bool:
    (run,) = sb.run([Job("def f(x):\n    return x\n", ["f(1)"])])
    return passes_test(EXPECTED, run.outputs[0])


@dataclass
class Outcome:
    """What a hostile answer came to, and what the sandbox left behind once closed."""

    status: str
    outputs: list[str | None]
    call_errors: list[str | None]
    walls: str | None
    still_works: bool
    processes_left: list[int]
    ipc_left: list[str]


def run_as_root(code: str, calls: tuple[str, ...], host: Host, limits: dict) -> Outcome:
    with Sandbox(sandbox_params(**limits)) as sb:
        uids = set(sandbox_workers().values())
        assert uids, "found no sandbox worker to watch"
        (run,) = sb.run([Job(code, calls)])
        # The pytest process surviving this far is itself a check: several answers aim at it.
        still_works = normal_job_passes(sb)
        walls = sb.walls
    # Clean up before asserting anything, so that a failing case leaves nothing either.
    ipc_left = remove_ipc_of(uids) + remove_message_queue(host.marker)
    return Outcome(run.status, run.outputs, run.call_errors, walls, still_works, processes_of(uids), ipc_left)


def run_as_user(user: NonRoot, code: str, calls: tuple[str, ...], host: Host, limits: dict) -> Outcome:
    # Under our own uid (tests run by a normal user), SysV objects that were there before are not the answer's.
    before = set() if user.prefix else ipc_of({user.uid})
    r, left = user.call(
        "tests.support.nonroot:run_job", host.cwd, host.scratch, code=code, calls=list(calls), params=limits
    )
    left += processes_of({user.uid}) if user.prefix else []
    ipc_left = remove_ipc_of({user.uid}, before) + remove_message_queue(host.marker)
    return Outcome(
        r["status"], r["outputs"], r["call_errors"], r["walls"], passes_test(EXPECTED, r["plain"]), left, ipc_left
    )


@pytest.mark.parametrize("user", ["root", "non-root"])
@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_answer_scores_nothing_and_leaves_nothing(case: Hostile, user: str, host: Host, nonroot):
    limits = FAST_LIMITS | dict(case.limits)
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip("the root sandbox needs root")
        out = run_as_root(host.fill(case.code), case.calls, host, limits)
    else:
        out = run_as_user(nonroot, host.fill(case.code), case.calls, host, limits)
    assert out.walls == ("root" if user == "root" else "user-namespace")
    expected = case.expected(out.walls)
    assert (out.status, tuple(out.call_errors)) == expected
    assert not any(SECRET in (o or "") for o in out.outputs)
    assert not any(passes_test(EXPECTED, o) for o in out.outputs)
    assert out.still_works
    assert out.processes_left == []
    assert host.files_left() == []
    assert not host.accepted_a_connection()
    assert out.ipc_left == []


WITHOUT_WALLS = """
import json
from sweetflow.backend.sandbox.pool import Job, Sandbox
from tests.support.params import sandbox_params
with Sandbox(sandbox_params(workers=1, run_without_walls=True)) as sb:
    (run,) = sb.run([Job("def f(x):\\n    return x\\n", ["f(1)"])])
    print(json.dumps({"walls": sb.walls, "isolation": sb.isolation, "output": run.outputs[0]}))
"""


def test_without_walls_the_sandbox_refuses_to_run_answers_unless_told_to(nonroot):
    """A normal user denied user namespaces for real (see `NonRoot.without_user_namespaces`)."""
    if isinstance(nonroot, str):
        pytest.skip(nonroot)
    base = tempfile.mkdtemp(prefix="sweetflow-nonroot-refusal-")
    try:
        os.chmod(base, 0o755)
        row = json.loads((PROJECT_ROOT / "tests/data/colbench-sample/backend_test_first100.jsonl").open().readline())
        trajectories = Path(base, "trajectories.jsonl")
        trajectories.write_text(json.dumps({"task": row, "answer": row["ground_truth"]}) + "\n")

        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                nonroot.without_user_namespaces(*args),
                cwd=base,
                env=nonroot.env(base),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )

        score = run(
            "-m",
            "sweetflow.cli",
            "score",
            str(trajectories),
            "--domain",
            "backend",
            "--params",
            str(PROJECT_ROOT / "params.yaml"),
        )
        told = run("-c", WITHOUT_WALLS)
    finally:
        shutil.rmtree(base)
    message = " ".join((score.stdout + score.stderr).split())
    assert score.returncode == 1, message
    assert "cannot wall off untrusted code" in message and "missing: no-network" in message
    assert "max_user_namespaces" in message  # the worker's reason
    assert "set run_without_walls: true" in message and "success_rate" not in message
    assert told.returncode == 0, told.stderr
    result = json.loads(told.stdout.splitlines()[-1])
    assert result["walls"] is None and "no-network" not in result["isolation"]
    assert passes_test(EXPECTED, result["output"])
    assert "without no-network" in told.stderr  # the warning


def wait_until_dead(pid: int) -> None:
    """Until `pid` is a zombie: our child, not yet reaped."""
    while True:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                return
        time.sleep(0.01)


def test_a_dead_worker_is_replaced_and_fails_only_its_job():
    others = set(sandbox_workers())  # module fixtures of other tests may have workers running
    with Sandbox(FAST) as sb:
        (pid,) = set(sandbox_workers()) - others
        os.kill(pid, 9)
        wait_until_dead(pid)  # so that the next request meets a closed pipe
        first, second = (sb.run([Job("def f(x):\n    return x\n", ["f(1)"])])[0] for _ in range(2))
    assert first is not None and first.status == "sandbox_error"
    assert second is not None and passes_test(EXPECTED, second.outputs[0])


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(sandbox_params(workers=2, call_timeout_s=1.0, task_timeout_s=10)) as sb:
        yield sb


def test_correct_answer_passes_every_test(sandbox):
    calls = [f"f({i})" for i in range(10)]
    (check,) = check_references([{"ground_truth": "def f(x):\n    return [x] * x\n", "test_cases": calls}], sandbox)
    answer = "Sure:\n```python\ndef f(n):\n    return [n for _ in range(n)]\n```"
    (score,) = score_answers([answer], [check.expected], [calls], sandbox)
    assert score.success and score.tests_passed == 1.0 and score.status == "ok"


def test_call_timeout_fails_only_the_slow_call(sandbox):
    code = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    (run,) = sandbox.run([Job(code, ["f(1)", "f(2)", "f(3)"])])
    assert run.call_errors == [None, "timeout", None]
    assert [passes_test(plaindata.dumps(i), out) for i, out in enumerate(run.outputs, 1)] == [True, False, True]


def test_stdlib_and_numpy_import_inside_the_sandbox(sandbox):
    # Modules the worker does not pre-import, so they load inside the jailed child.
    code = """
        import csv, hashlib, io
        import numpy as np
        def f(x):
            rows = list(csv.reader(io.StringIO('a,b\\n1,2\\n')))
            return [rows[1], hashlib.sha256(b'x').hexdigest()[:8], int(np.arange(x).sum()), np.float64(0.5) * x]
        """
    (run,) = sandbox.run([Job(textwrap.dedent(code), ["f(3)"])])
    assert run.status == "ok"
    assert plaindata.loads(run.outputs[0]) == [["1", "2"], "2d711642", 3, 1.5]


def test_results_keep_job_order_across_workers(sandbox):
    # Uneven sleeps make the two workers finish out of order.
    code = "import time\ndef f(x):\n    time.sleep(0.02 * (x % 3))\n    return x\n"
    runs = sandbox.run([Job(code, [f"f({i})"]) for i in range(12)])
    assert [plaindata.loads(r.outputs[0]) for r in runs] == list(range(12))
