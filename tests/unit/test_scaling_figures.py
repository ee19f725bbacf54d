"""scripts/scaling_figures.py: the data-scale tables and figures from the experiment's records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from tests.support.project import ROOT

SCRIPT = ROOT / "scripts" / "scaling_figures.py"
spec = importlib.util.spec_from_file_location("scaling_figures", SCRIPT)
figures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(figures)


def record(records: Path, name: str, backend: dict) -> None:
    (records / name / "summary").mkdir(parents=True)
    (records / name / "summary" / "results.json").write_text(json.dumps({"domains": {"backend": backend}}))


def test_points_are_ordered_by_trajectories_and_a_point_without_a_record_is_left_out(tmp_path):
    results = ROOT / "reports/experiments/scale-750/summary/results.json"
    backend = json.loads(results.read_text())["domains"]["backend"]
    record(tmp_path, "scale-3000-tuned", backend)
    record(tmp_path, "scale-3000", backend)
    record(tmp_path, "scale-750", backend)
    (tmp_path / "scale-15000").mkdir()  # configured, not run yet
    (tmp_path / "frontend" / "summary").mkdir(parents=True)  # another experiment
    data = figures.points(tmp_path)
    assert list(data) == [(750, False), (3000, False), (3000, True)]
    text = figures.tables(data)
    assert "| method | 750 | 3,000 | 3,000, re-tuned |" in text
    rft = figures.success(backend)["rft"]
    assert f"| RFT | {rft[0]:.1f} ± {rft[1]:.1f} | {rft[0]:.1f} ± {rft[1]:.1f} | {rft[0]:.1f} ± {rft[1]:.1f} |" in text
    low, high = figures.differences(backend)["rft"][1:]
    assert low <= figures.differences(backend)["rft"][0] <= high
    figures.plot_success(data, tmp_path / "s.png")
    figures.plot_critics(data, tmp_path / "c.png")
    assert (tmp_path / "s.png").stat().st_size > 0 and (tmp_path / "c.png").stat().st_size > 0


def test_the_committed_records_are_the_ones_the_script_reads():
    committed = {p.name for p in (ROOT / "reports/experiments").glob("scale-*")}
    assert {figures.record_name(point) for point in figures.points(ROOT / "reports/experiments")} == committed
