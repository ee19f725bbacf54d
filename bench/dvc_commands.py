"""Benchmark: DVC's commands on this project's pipeline with ruamel.yaml's C parser
(`ruamel.yaml.clib`, a dependency of the project) against its pure-Python one.

Every dvc command parses dvc.yaml and dvc.lock (`dvc repro` reads them as `dvc status` does, then
rewrites dvc.lock after each stage with ruamel.yaml's round-trip parser, which is pure Python either way).
Each command runs in a fresh process, in a scratch git + DVC repository holding copies of the
project's dvc.yaml, dvc.lock and params.yaml (so nothing is written into the project, and no output
is hashed: what is left is DVC's own work); the pure-Python variant is the same process with the
C module hidden (`sys.modules["_ruamel_yaml"] = None`, which ruamel.yaml reads as "not installed").
Alternating, `--rounds` times; the table gives each variant's median wall seconds and the ratio.
Prints a table and writes bench/results/dvc_commands.json. Usage:
    python bench/dvc_commands.py [--rounds 5] [--project .] [--commands status dag]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "dvc_commands.json"
COMMANDS = {
    "status": ["status", "--json"],
    "dag": ["dag", "--md"],
}
RUN_DVC = "import sys\n{hide}from dvc.cli import main\nsys.exit(main(sys.argv[1:]))"
HIDE_C = 'sys.modules["_ruamel_yaml"] = None\n'


def scratch_repository(project: Path, into: Path) -> Path:
    for name in ("dvc.yaml", "dvc.lock", "params.yaml"):
        shutil.copy(project / name, into / name)
    for cmd in (["git", "init", "-q"], [sys.executable, "-m", "dvc", "init", "-q"]):
        subprocess.run(cmd, cwd=into, check=True, capture_output=True)
    return into


def run_once(repository: Path, args: list[str], pure: bool) -> float:
    code = RUN_DVC.format(hide=HIDE_C if pure else "")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=repository, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):  # `dvc status` of a pipeline without its outputs may exit 1
        raise SystemExit(f"dvc {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    from sweetflow.core.artifacts import machine

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--project", type=Path, default=ROOT, help="where dvc.yaml, dvc.lock and params.yaml are")
    parser.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=sorted(COMMANDS))
    args = parser.parse_args()
    try:
        import _ruamel_yaml  # noqa: F401
    except ImportError:
        raise SystemExit("ruamel.yaml.clib is not installed: scripts/setup.sh installs it") from None

    lock_bytes = (args.project / "dvc.lock").stat().st_size
    times: dict[str, dict[str, list[float]]] = {c: {"c": [], "pure": []} for c in args.commands}
    with tempfile.TemporaryDirectory(prefix="sweetflow-dvc-bench-") as scratch:
        repository = scratch_repository(args.project, Path(scratch))
        for r in range(args.rounds):
            for command in args.commands:
                order = ("c", "pure") if r % 2 == 0 else ("pure", "c")
                for variant in order:
                    times[command][variant].append(run_once(repository, COMMANDS[command], variant == "pure"))

    table = Table(title=f"dvc commands, dvc.lock of {lock_bytes / 1000:.0f} kB, {args.rounds} alternating rounds")
    for column in ("command", "C parser (s)", "pure Python (s)", "pure / C"):
        table.add_column(column, justify="right")
    rows = []
    for command in args.commands:
        c, pure = statistics.median(times[command]["c"]), statistics.median(times[command]["pure"])
        rows.append({"command": "dvc " + " ".join(COMMANDS[command]), "c_s": c, "pure_s": pure, "ratio": pure / c})
        table.add_row(rows[-1]["command"], f"{c:.2f}", f"{pure:.2f}", f"{pure / c:.2f}x")
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": machine(),
        "python": platform.python_version(),
        "project": str(args.project),
        "lock_bytes": lock_bytes,
        "rounds": args.rounds,
        "rows": rows,
        "times": times,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
