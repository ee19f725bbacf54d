"""Run a sandbox as a normal user, from a test run by root or by a normal user.

`NonRoot.call("module:function", **kwargs)` starts this module as a separate process (`python -m
tests.support.nonroot`): under a fresh uid when the tests run as root (setpriv), as the tests' own
user otherwise. It calls the function, which returns JSON data, and reports it with the pids of the
processes that outlived it (whatever a sandbox leaves when it closes is reparented to us).
`run_job` is such a function: one job in a pool of one worker, then a plain job (does the pool still
work?).

The interpreter must be one the user can run, and it must start the worker the same way: a venv
whose interpreter lies under a directory closed to others (/root/.pyenv, mode 0700) is not, so
then the user gets a venv of the system's interpreter of the same version, reading our site-packages.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.project import ROOT

PR_SET_CHILD_SUBREAPER = 36
CHECK = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import sweetflow.backend.sandbox.pool'], check=True)"  # noqa: E501


@dataclass
class NonRoot:
    uid: int  # the user the sandbox runs as
    python: str
    prefix: list[str]  # the command that becomes that user ([] when we are that user)

    def command(self, *args: str) -> list[str]:
        return [*self.prefix, self.python, *args]

    def call(self, function: str, cwd: str, scratch: str | None = None, **kwargs) -> tuple[object, list[int]]:
        """Call `function` ("module:name") as the user, from `cwd`, with tempfile's directory `scratch`:
        (what it returned, the processes that outlived it)."""
        request = {"function": function, "kwargs": kwargs, "scratch": scratch}
        out = subprocess.run(
            self.command("-m", "tests.support.nonroot"),
            input=json.dumps(request),
            cwd=cwd,
            env=self.env(cwd),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(f"{function} as uid {self.uid} failed:\n{out.stderr[-3000:]}")
        reply = json.loads(out.stdout.splitlines()[-1])
        return reply["result"], reply["left"]

    def env(self, home: str) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(ROOT), "HOME": home}

    def without_user_namespaces(self, *args: str) -> list[str]:
        """The command `python *args` as the user, where it may not make a user namespace: in one of its
        own whose limit on them is 0 (the sysctl user.max_user_namespaces, as each user namespace has
        it), or as it is where it has none to begin with."""
        probe = subprocess.run(
            [*self.prefix, "unshare", "--user", "--map-root-user", "true"], capture_output=True, check=False
        )
        if probe.returncode != 0:
            return self.command(*args)
        limit = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
        return [*self.prefix, "unshare", "--user", "--map-root-user", "sh", "-c", limit, "sh", self.python, *args]

    def give(self, path: str) -> None:
        if self.prefix:
            os.chown(path, self.uid, self.uid)


def non_root(workdir: Path) -> NonRoot | str:
    """A normal user able to run our code, or why there is none. `workdir` must outlive its use."""
    if os.geteuid() != 0:
        return NonRoot(os.geteuid(), sys.executable, [])
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing: no way to run the sandbox as a normal user"
    uid = random.SystemRandom().randrange(2_000_000_000, 2_100_000_000)  # no account, no process has it
    prefix = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    user = NonRoot(uid, sys.executable, prefix)
    if _works(user):
        return user
    system = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/bin")
    if system is None:
        return f"uid {uid} cannot run {sys.executable}, and there is no system Python of the same version"
    venv = workdir / "venv"
    subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = subprocess.run(
        [str(venv / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    Path(site, "sweetflow-tests.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    for d in (workdir, *workdir.parents):
        if d != Path("/") and d.stat().st_mode & 0o005 != 0o005:
            return f"uid {uid} cannot run {sys.executable} and cannot reach {workdir} for a venv of its own"
    user = NonRoot(uid, str(venv / "bin/python"), prefix)
    if _works(user):
        return user
    return f"uid {uid} can run neither {sys.executable} nor a venv of {system} with our site-packages"


def _works(user: NonRoot) -> bool:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(user.command("-c", CHECK), cwd="/", env=env, capture_output=True, check=False).returncode == 0


def _children() -> list[int]:
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as fh:
                if int(fh.read().rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _reap_orphans(patience_s: float = 5.0) -> list[int]:
    """Wait for whatever the pool left behind (reparented to us) to die; return what did not."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return []
        if time.monotonic() > deadline:
            return _children()
        time.sleep(0.05)


def run_job(code: str, calls: list[str], params: dict) -> dict:
    from sweetflow.backend.sandbox.pool import Job, Sandbox
    from tests.support.params import sandbox_params

    with Sandbox(sandbox_params(**params)) as sb:
        (run,) = sb.run([Job(code, calls)])
        (plain,) = sb.run([Job("def f(x):\n    return x\n", ["f(1)"])])
        return {
            "status": run.status,
            "outputs": run.outputs,
            "call_errors": run.call_errors,
            "walls": sb.walls,
            "plain": plain.outputs[0],
        }


def main() -> None:
    request = json.loads(sys.stdin.read())
    if request["scratch"]:
        tempfile.tempdir = request["scratch"]
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    module, name = request["function"].split(":")
    result = getattr(importlib.import_module(module), name)(**request["kwargs"])
    print(json.dumps({"result": result, "left": _reap_orphans()}))


if __name__ == "__main__":
    main()
