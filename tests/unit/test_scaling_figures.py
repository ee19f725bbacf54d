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


def record(records: Path, name: str, backend: dict, params: str | None = None) -> None:
    (records / name / "summary").mkdir(parents=True)
    (records / name / "summary" / "results.json").write_text(json.dumps({"domains": {"backend": backend}}))
    if params is not None:
        (records / name / "params.yaml").write_text(params)


def test_points_are_ordered_by_trajectories_and_a_point_without_a_record_is_left_out(tmp_path):
    results = ROOT / "reports/experiments/scale-750/summary/results.json"
    backend = json.loads(results.read_text())["domains"]["backend"]
    record(tmp_path, "scale-3000-tuned", backend)
    record(tmp_path, "scale-3000", backend)
    record(tmp_path, "scale-750", backend)
    (tmp_path / "scale-15000").mkdir()  # configured, not run yet
    (tmp_path / "frontend" / "summary").mkdir(parents=True)  # another experiment
    data = figures.points(tmp_path)
    assert [(p.trajectories, p.chosen_at) for p in data] == [(750, 750), (3000, 750), (3000, 3000)]
    text = figures.tables(data)
    assert "| method | 750 | 3,000 | 3,000, re-tuned |" in text
    rft = figures.success(backend)["rft"]
    assert f"| RFT | {rft[0]:.1f} ± {rft[1]:.1f} | {rft[0]:.1f} ± {rft[1]:.1f} | {rft[0]:.1f} ± {rft[1]:.1f} |" in text
    low, high = figures.differences(backend)["rft"][1:]
    assert low <= figures.differences(backend)["rft"][0] <= high
    figures.plot_success(data, tmp_path / "s.png")
    figures.plot_critics(data, tmp_path / "c.png")
    assert (tmp_path / "s.png").stat().st_size > 0 and (tmp_path / "c.png").stat().st_size > 0


def test_a_point_that_carries_a_re_tuning_s_configurations_is_known_by_it(tmp_path):
    backend = json.loads((ROOT / "reports/experiments/scale-750/summary/results.json").read_text())["domains"]
    params = (ROOT / "params.yaml").read_text()
    sweet = "    critic: with_info\n    min_reward: {backend: 1.0, frontend: 0.9}\n    seed: 0\n    epochs: 1\n"
    # 1e-05, as DVC writes it
    tuned = params.replace(sweet + "    learning_rate: 0.0001\n", sweet + "    learning_rate: 1e-05\n")
    assert tuned != params
    record(tmp_path, "scale-750", backend["backend"], params)
    record(tmp_path, "scale-3000-tuned", backend["backend"], tuned)
    record(tmp_path, "scale-15000", backend["backend"], tuned)
    record(tmp_path, "scale-60000", backend["backend"], params)
    data = figures.points(tmp_path)
    assert [(p.trajectories, p.chosen_at) for p in data] == [(750, 750), (3000, 3000), (15000, 3000), (60000, 750)]
    assert [figures.column_label(p) for p in data] == ["750", "3,000, re-tuned", "15,000, tuned at 3,000", "60,000"]
    figures.plot_success(data, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 0


def test_the_committed_records_are_the_ones_the_script_reads():
    committed = {p.name for p in (ROOT / "reports/experiments").glob("scale-*")}
    assert {point.name for point in figures.points(ROOT / "reports/experiments")} == committed
