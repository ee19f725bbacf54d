"""GPU check, last step: every step's verdict, the benchmark's figures, the tests' outcome and where each
stage of the small project's run put its models, from the files run.sh left in OUT, into OUT/summary.json;
printed as a table.

    .venv/bin/python bench/gpu_check/summary.py OUT
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table


def read(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def verdict(step: dict | None) -> str:
    if step is None:
        return "not run"
    return "timed out" if step["timed_out"] else "pass" if step["rc"] == 0 else "fail"


def tests(log: Path) -> dict:
    """pytest's last line and its failures, from the `tests` step's log."""
    text = log.read_text(errors="replace") if log.exists() else ""
    finals = re.findall(r"^=*\s*(\d+ \w+.*? in [\d.]+s)", text, re.M)
    failures = [line[:300] for line in text.splitlines() if re.match(r"^(FAILED|ERROR) ", line)]
    skipped = [line[:300] for line in text.splitlines() if line.startswith("SKIPPED")]
    return {"outcome": finals[-1] if finals else None, "failures": failures[:30], "skipped": skipped[:30]}


def stages(pytest_dir: Path) -> dict:
    """Each stage of the GPU test's project: its wall time and the GPUs its process saw (its run record),
    and the device and dtype of each model it ran (its output's manifest)."""
    out = {}
    for path in sorted(pytest_dir.glob("**/project/reports/runs/*.json")):
        record = read(path) or {}
        gpus = [g["name"] for g in record.get("machine", {}).get("gpus", [])]
        out[path.stem] = {"wall_time_s": record.get("wall_time_s"), "gpus": gpus, "devices": []}
    for path in sorted(pytest_dir.glob("**/project/**/manifest.json")):
        manifest = read(path) or {}
        if manifest.get("devices") and manifest.get("stage") in out:
            devices = [f"{model} {d['device']} {d['dtype']}" for model, d in manifest["devices"].items()]
            out[manifest["stage"]]["devices"] = devices
    return out


def main(out: Path) -> int:
    steps = {}
    for line in (out / "steps.jsonl").read_text().splitlines() if (out / "steps.jsonl").exists() else []:
        entry = json.loads(line)
        steps[entry.pop("step")] = entry
    bench = read(out / "bench.json") or {}
    summary = {
        "verdicts": {name: verdict(steps.get(name)) for name in ("setup", "env", "bench", "tests")},
        "steps": steps,
        "device": bench.get("env"),
        "matmul_bf16_tflops": bench.get("matmul_bf16_tflops"),
        "peak_tflops": bench.get("peak_tflops"),
        "training": {name: e.get("training", {}).get("summary") for name, e in bench.get("models", {}).items()},
        "generation": {name: e.get("generation") for name, e in bench.get("models", {}).items()},
        "bench_errors": bench.get("errors"),
        "bench_skipped": bench.get("skipped"),
        "tests": tests(out / "tests.log"),
        "stages": stages(out / "pytest"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")

    console = Console(width=160)
    console.print(f"verdicts: {summary['verdicts']}; tests: {summary['tests']['outcome']}")
    for line in summary["tests"]["failures"]:
        console.print(f"  {line}")
    table = Table(title="the small project's stages under `dvc repro` (tests/integration/test_gpu_pipeline.py)")
    for column in ("stage", "seconds", "models on"):
        table.add_column(column)
    for name, stage in summary["stages"].items():
        table.add_row(name, str(stage["wall_time_s"]), ", ".join(stage["devices"]))
    console.print(table)
    console.print(f"wrote {out / 'summary.json'}; the benchmark's table is at the end of {out / 'bench.log'}")
    return 0 if set(summary["verdicts"].values()) == {"pass"} else 1


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
