"""A cheat that searches the host for ground truth from inside the sandbox, and a place to hide it.

`search_code(token, place)` is an answer whose `search()` reads the mount table, walks every
directory the table names and every directory above those, and "/" itself, a few levels down, and
reports each file that holds `token` or is a checkout's params.yaml, and each line of the mount
table that names `place`. It first writes the token into its own /tmp and must find it there: a
search that finds nothing because it searched nothing proves nothing. `beside_project()` makes a
directory beside the project, outside every folder that a sandbox hiding a list of folders (the
project, the working directory, /tmp, the homes) would hide.
"""

from __future__ import annotations

import shutil
import textwrap
import time
import uuid
from contextlib import contextmanager

from tests.support.project import ROOT

# The walk reads many files on a host that shows them all: room for it, within one call.
SEARCH_LIMITS = {"workers": 1, "call_timeout_s": 60.0, "task_timeout_s": 90.0, "cpu_s": 60}

SEARCH = textwrap.dedent(
    """
    import os

    TOKEN = "$token"
    PLACE = "$place"
    SKIP = ("/proc", "/sys", "/dev", "/usr")  # the kernel's views, devices and the system's own files
    LIBRARIES = ("site-packages", "dist-packages", "lib-dynload", "python3", "node_modules", ".git")

    def walk(start, depth, found):
        if depth < 0 or start.startswith(SKIP) and start != "/":
            return
        try:
            entries = list(os.scandir(start))
        except OSError:
            return
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(LIBRARIES):
                        walk(entry.path, depth - 1, found)
                elif entry.is_file(follow_symlinks=False) and entry.stat().st_size < 1 << 20:
                    with open(entry.path, "rb") as fh:
                        if entry.name == "params.yaml" or TOKEN.encode() in fh.read():
                            found.add(entry.path)
            except OSError:
                pass

    def search():
        with open("/tmp/control.txt", "w") as fh:
            fh.write(TOKEN)
        with open("/proc/self/mountinfo") as fh:
            table = fh.read().splitlines()
        starts = {"/", "/tmp"}
        for line in table:
            for path in line.split()[3:5]:  # the mount's root in its filesystem, and where it is mounted
                while path not in ("/", ""):
                    starts.add(path)
                    path = os.path.dirname(path)
        found = set()
        for start in sorted(starts):
            if not os.path.basename(start).startswith(LIBRARIES):
                walk(start, 3, found)
        return {"files": sorted(found), "mount_lines": [line for line in table if PLACE in line]}
    """
)


def search_code(token: str, place: str) -> str:
    return SEARCH.replace("$token", token).replace("$place", place)


@contextmanager
def beside_project():
    """A directory beside the project, open to every user: outside everything a sandbox that hides a
    list of folders (the project, the working directory, /tmp, the homes) would hide."""
    path = ROOT.parent / f"sweetflow-beside-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    try:
        yield path
    finally:
        # A tool run in it may still be writing there as it exits (DVC's .dvc/tmp): try again a while.
        for _ in range(50):
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                break
            time.sleep(0.1)
        if path.exists():
            shutil.rmtree(path)  # still there: say why


def found_by(output: str) -> dict:
    """What the search found, from its plain-data output, its own control file taken out."""
    from sweetflow.backend.sandbox import plaindata

    found = plaindata.loads(output)
    assert "/tmp/control.txt" in found["files"]  # the search works
    found["files"].remove("/tmp/control.txt")
    return found
