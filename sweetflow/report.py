"""The final report: the paper's Table 2 rebuilt from our evaluations, domain by domain, a check of
the paper's ordering, and plots of the methods and of the training curves.

Every input may be missing (stages not run yet); a missing method becomes a "not run" row and a
missing curve a missing line, so the report can be written at any point of the pipeline.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib.style
from matplotlib.figure import Figure

from sweetflow.errors import InputError

# Rows of Table 2 in the paper's order; trained methods not listed here go after these.
TRAINED = {
    "zero_shot": "Zero-shot",
    "rft": "Rejection fine-tuning",
    "mtdpo": "Multi-turn DPO",
    "sweet": "SWEET-RL",
}
SCRIPTED = {
    "expert": "Expert (scripted, upper bound)",
    "no_ask": "No questions (scripted, lower bound)",
}
LABELS = {**TRAINED, "sweet_no_info": "SWEET-RL without training-time information", **SCRIPTED}
# The reference solutions scored as answers: a check of the benchmark, not a method.
REFERENCE = "reference"
NOT_RUN = "not run"
DPI = 100


@dataclass(frozen=True)
class DomainSpec:
    """How one domain's results are read and shown: its two headline metrics (fractions in the
    metrics files, % in the table), the one the paper's ordering is checked on, and the paper's
    numbers (arXiv 2503.15478, Table 2 and ablations, Llama-3.1-8B; GPT-4o collaborating)."""

    title: str
    metrics: tuple[str, str]
    columns: tuple[str, str]
    goal_metric: int  # index into `metrics`
    description: str
    paper: dict[str, tuple[float, float]]
    gpt4o: tuple[float, float]


DOMAINS = {
    "backend": DomainSpec(
        "Backend programming",
        ("tests_passed", "success_rate"),
        ("tests passed", "success"),
        1,
        "% of hidden tests passed and % of tasks solved (all tests passed)",
        {"zero_shot": (34.2, 22.4), "rft": (40.9, 28.2), "mtdpo": (48.0, 34.4), "sweet": (56.8, 40.4),
         "sweet_no_info": (44.0, 31.2)},  # fmt: skip
        (54.6, 40.4),
    ),
    "frontend": DomainSpec(
        "Frontend design",
        ("similarity", "win_rate"),
        ("similarity", "win rate"),
        1,
        "mean visual similarity of the final page to the target (×100) and % of tasks on which the page is "
        "closer to the target than the page made from the description alone (a tie is half a win)",
        {"zero_shot": (72.4, 33.8), "rft": (75.2, 38.6), "mtdpo": (76.9, 42.8), "sweet": (77.7, 48.2)},
        (78.1, 50.0),
    ),
}


@dataclass(frozen=True)
class Row:
    """One method of a domain's table; means and stds are fractions, stds None for a single run."""

    method: str
    label: str
    ran: bool
    means: tuple[float | None, float | None] = (None, None)
    stds: tuple[float | None, float | None] = (None, None)
    n_seeds: int = 0
    paper: tuple[float, float] | None = None


# --- reading ----------------------------------------------------------------------------------------


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _number(data: dict, key: str, path: Path) -> float:
    if key not in data:
        raise InputError(f"{path}: field {key!r} is missing")
    value = data[key]
    # bool is an int subclass; a true/false here is a bug upstream, not a rate.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{path}: field {key!r} must be a finite number, got {value!r}")
    return float(value)


def method_row(method: str, data: dict, path: Path, spec: DomainSpec) -> Row:
    """A Row from one metrics.json: a single run, or a checkpoint's means over seeds (has "seeds")."""
    means = tuple(_number(data, key, path) for key in spec.metrics)
    if "seeds" not in data:
        return Row(method, label(method), True, means, (None, None), 1, spec.paper.get(method))
    if not isinstance(data["seeds"], dict) or not data["seeds"]:
        raise InputError(f"{path}: field 'seeds' must be a non-empty mapping of seed to metrics")
    stds = tuple(_number(data, f"{key}_std", path) for key in spec.metrics)
    return Row(method, label(method), True, means, stds, len(data["seeds"]), spec.paper.get(method))


def label(method: str) -> str:
    return LABELS.get(method, method)


def read_methods(domain_reports: Path, spec: DomainSpec) -> dict[str, Row]:
    """Every `<domain_reports>/<method>/metrics.json` present, by method name."""
    if not domain_reports.is_dir():
        return {}
    return {
        d.name: method_row(d.name, read_json(d / "metrics.json"), d / "metrics.json", spec)
        for d in sorted(domain_reports.iterdir())
        if (d / "metrics.json").is_file()
    }


def table_rows(methods: dict[str, Row], spec: DomainSpec, trained: bool = True) -> list[Row]:
    """Table 2's rows: the paper's methods (present or not, when the domain is trained), other
    trained methods, the scripted bounds (present or not), then any other single-run agent; the
    reference is left out."""
    others = sorted(m for m in methods if m not in TRAINED and m not in SCRIPTED and m != REFERENCE)
    paper_rows = list(TRAINED) if trained else [m for m in TRAINED if m in methods]
    order = (
        paper_rows
        + [m for m in others if methods[m].n_seeds and methods[m].stds[0] is not None]
        + list(SCRIPTED)
        + [m for m in others if methods[m].stds[0] is None]
    )
    return [methods.get(m) or Row(m, label(m), False, paper=spec.paper.get(m)) for m in order]


def read_critics(stage_reports: Path) -> list[dict]:
    """Per critic, the optional numbers of `<stage_reports>/critics/<name>/metrics.json` (training
    pairs, held-out pair accuracy) and `<stage_reports>/critic_check/<name>/metrics.json` (ranking
    agreement); None where absent."""
    names = sorted({d.name for sub in ("critics", "critic_check") for d in _subdirs(stage_reports / sub)})
    rows = []
    for name in names:
        row = {"critic": name, "pairs": None, "heldout_accuracy": None, "ranking_agreement": None}
        for sub, fields in (("critics", (("pairs", "train_pairs"), ("heldout_accuracy", "heldout_accuracy"))),
                            ("critic_check", (("ranking_agreement", "ranking_agreement"),))):  # fmt: skip
            path = stage_reports / sub / name / "metrics.json"
            if path.is_file():
                data = read_json(path)
                for field, key in fields:
                    if data.get(key) is not None:
                        row[field] = _number(data, key, path)
        rows.append(row)
    return rows


def read_curve(path: Path) -> tuple[list[float], list[float]]:
    """A DVCLive TSV (`step<TAB>name` header, one row per logged step) as (steps, values)."""
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("step\t"):
        raise InputError(f"{path}: expected a DVCLive TSV with a 'step<TAB><name>' header")
    steps, values = [], []
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            step, value = line.split("\t")[:2]
            steps.append(float(step))
            values.append(float(value))
        except ValueError:
            raise InputError(f"{path}: line {i}: expected '<step>\\t<value>', got {line!r}") from None
    return steps, values


def find_curves(stage_reports: Path, prefix: str = "") -> list[tuple[str, list[tuple[str, Path]]]]:
    """Panels of training curves as (title, [(line label, TSV path)]), only for files present."""
    panels = []

    def panel(title: str, lines: list[tuple[str, Path]]) -> None:
        present = [(name, p) for name, p in lines if p.is_file()]
        if present:
            panels.append((prefix + title, present))

    def train_eval(metrics: Path) -> list[tuple[str, Path]]:
        return [("train", metrics / "train" / "loss.tsv"), ("eval", metrics / "eval" / "loss.tsv")]

    panel("base policy (SFT)", train_eval(stage_reports / "base_model" / "plots" / "metrics"))
    for d in _subdirs(stage_reports / "critics"):
        panel(f"critic {d.name}", train_eval(d / "plots" / "metrics"))
    for d in _subdirs(stage_reports / "policies"):
        seeds = [s for s in _subdirs(d / "plots") if s.name.startswith("seed") and s.name[4:].isdigit()]
        seeds.sort(key=lambda s: int(s.name[4:]))
        panel(f"policy {d.name}", [(s.name.replace("seed", "seed "), s / "metrics" / "train" / "loss.tsv")
                                   for s in seeds])  # fmt: skip
    return panels


def _subdirs(path: Path) -> list[Path]:
    return sorted(d for d in path.iterdir() if d.is_dir()) if path.is_dir() else []


# --- the goal check ---------------------------------------------------------------------------------


def goal_check(rows: list[Row], spec: DomainSpec) -> dict:
    """Does SWEET-RL > MT-DPO > RFT ≥ zero-shot hold on the domain's goal metric (backend: success;
    frontend: win rate), and is the SWEET-RL − MT-DPO gap larger than the seed spread (the larger
    of the two methods' sample stds)?"""
    k = spec.goal_metric
    ran = {r.method: r for r in rows if r.ran}
    needed = ["sweet", "mtdpo", "rft", "zero_shot"]
    missing = [m for m in needed if m not in ran]
    if missing:
        return {"made": False, "missing": missing, "metric": spec.metrics[k]}
    s = {m: ran[m].means[k] for m in needed}
    links = [("sweet", "mtdpo", s["sweet"] > s["mtdpo"]), ("mtdpo", "rft", s["mtdpo"] > s["rft"]),
             ("rft", "zero_shot", s["rft"] >= s["zero_shot"])]  # fmt: skip
    # A spread needs at least two seeds of both methods; a single run has no std.
    multi_seed = all(ran[m].n_seeds >= 2 for m in ("sweet", "mtdpo"))
    spread = max(ran["sweet"].stds[k], ran["mtdpo"].stds[k]) if multi_seed else None
    gap = s["sweet"] - s["mtdpo"]
    return {
        "made": True,
        "metric": spec.metrics[k],
        "values": s,
        "ordering_holds": all(ok for _, _, ok in links),
        "ordering_fails_at": [f"{a} vs {b}" for a, b, ok in links if not ok],
        "gap": gap,
        "spread": spread,
        "gap_exceeds_spread": None if spread is None else gap > spread,
    }


def goal_sentences(check: dict, spec: DomainSpec) -> list[str]:
    name = spec.columns[spec.goal_metric]
    if not check["made"]:
        names = ", ".join(f"{label(m)} (`{m}`)" for m in check["missing"])
        return [f"The check cannot be made: not run yet: {names}."]
    s = {m: _pct(v) for m, v in check["values"].items()}
    chain = f"{s['sweet']} > {s['mtdpo']} > {s['rft']} ≥ {s['zero_shot']}"
    if check["ordering_holds"]:
        ordering = f"SWEET-RL > MT-DPO > RFT ≥ Zero-shot on mean {name} **holds** ({chain})."
    else:
        fails = "; ".join(" vs ".join(label(m) for m in link.split(" vs ")) for link in check["ordering_fails_at"])
        ordering = f"SWEET-RL > MT-DPO > RFT ≥ Zero-shot on mean {name} **does not hold** ({chain}; fails at: {fails})."
    gap = f"The SWEET-RL − MT-DPO gap in mean {name} is {check['gap'] * 100:.1f} points"
    if check["spread"] is None:
        spread = f"{gap}; the seed spread cannot be estimated: SWEET-RL and MT-DPO need at least two seeds each."
    else:
        verdict = "**holds**" if check["gap_exceeds_spread"] else "**does not hold**"
        spread = (f"{gap}; the seed spread, defined as the larger of the two methods' sample standard "
                  f"deviations of {name} over seeds, is {check['spread'] * 100:.1f} points: gap > spread {verdict}.")  # fmt: skip
    return [ordering, spread]


# --- markdown -----------------------------------------------------------------------------------------


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.1f}"


def cell(mean: float | None, std: float | None) -> str:
    """ "mean ± std" in % for a run over seeds, the plain value for a single run."""
    if mean is None:
        return NOT_RUN
    return _pct(mean) if std is None else f"{_pct(mean)} ± {_pct(std)}"


@dataclass
class DomainResults:
    """Everything the report shows for one domain."""

    domain: str
    rows: list[Row]
    check: dict
    reference: Row | None
    critics: list[dict]

    @property
    def spec(self) -> DomainSpec:
        return DOMAINS[self.domain]


def read_domain(reports: Path, domain: str, trained: bool) -> DomainResults:
    spec = DOMAINS[domain]
    methods = read_methods(reports / domain, spec)
    rows = table_rows(methods, spec, trained)
    return DomainResults(domain, rows, goal_check(rows, spec), methods.get(REFERENCE), read_critics(reports / domain / "stages"))


def render_markdown(results: list[DomainResults], seeds: list[int], plots: str) -> str:
    """results.md; `plots` is the directory of the PNGs relative to where the file is read."""
    out = [
        "# sweetflow results: SWEET-RL on ColBench",
        "",
        (f"Each trained policy is trained, and each checkpoint evaluated, once per seed over "
         f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))}); "
         f"the scripted agents run once."),
        "",
        "The paper's numbers (arXiv 2503.15478) are for Llama-3.1-8B on the official ColBench. They are not "
        "comparable with this project's tiny default (a sub-million-parameter policy on procedurally generated "
        "tasks, and an offline image similarity instead of CLIP for the frontend); compare the ordering of the "
        "methods, not the values.",
        "",
    ]
    for r in results:
        out += _domain_markdown(r, seeds)
    out += [
        "## Plots",
        "",
        f"![The headline metrics per method]({plots}/methods.png)",
        "",
        f"![Training loss curves]({plots}/training_curves.png)",
        "",
    ]
    return "\n".join(out)


def _domain_markdown(r: DomainResults, seeds: list[int]) -> list[str]:
    spec = r.spec
    a, b = spec.columns
    out = [
        f"## {spec.title} (`{r.domain}`)",
        "",
        f"Numbers are {spec.description}, on the test tasks.",
        "",
        f"| method | key | {a} (%) | {b} (%) | seeds | paper: {a} (%) | paper: {b} (%) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in r.rows:
        paper = row.paper or ("—", "—")
        out.append(
            f"| {row.label} | `{row.method}` | {cell(row.means[0], row.stds[0])} | {cell(row.means[1], row.stds[1])} "
            f"| {row.n_seeds if row.ran else '—'} | {paper[0]} | {paper[1]} |"
        )
    out += ["", f"GPT-4o, collaborative, in the paper: {spec.gpt4o[0]} / {spec.gpt4o[1]}.", ""]
    counts = sorted({row.n_seeds for row in r.rows if row.ran and row.stds[0] is not None})
    if counts and [len(seeds)] != counts:
        out += [f"Note: params list {len(seeds)} seeds but the evaluated checkpoints have "
                f"{', '.join(map(str, counts))}; rerun the pipeline for the current seeds.", ""]  # fmt: skip
    if r.reference is None:
        out += ["References scored as answers (sanity check of the benchmark): not run.", ""]
    else:
        values = ", ".join(f"{_pct(v)}% {name}" for v, name in zip(r.reference.means, spec.columns))
        out += [f"References scored as answers (sanity check of the benchmark, expected 100%): {values}.", ""]
    out += [f"### Goal check ({r.domain})", "", *goal_sentences(r.check, spec), ""]
    if r.critics:
        out += [
            f"### Critics ({r.domain})",
            "",
            "| critic | trajectory pairs | held-out pair accuracy (%) | ranking agreement (%) |",
            "|---|---|---|---|",
        ]
        for c in r.critics:
            pairs = "—" if c["pairs"] is None else f"{c['pairs']:.0f}"
            acc, agree = (("—" if c[k] is None else _pct(c[k])) for k in ("heldout_accuracy", "ranking_agreement"))
            out.append(f"| `{c['critic']}` | {pairs} | {acc} | {agree} |")
        out.append("")
    return out


def results_data(results: list[DomainResults], seeds: list[int]) -> dict:
    """The tables as data (results.json)."""
    return {
        "seeds": seeds,
        "domains": {
            r.domain: {
                "metrics": r.spec.metrics,
                "rows": [asdict(row) for row in r.rows],
                "reference": None if r.reference is None else asdict(r.reference),
                "goal_check": r.check,
                "critics": r.critics,
                "paper_gpt4o": r.spec.gpt4o,
            }
            for r in results
        },
    }


# --- plots ----------------------------------------------------------------------------------------------


def _save(fig: Figure, path: Path) -> None:
    # No "Software" text chunk (it carries matplotlib's version): the same data gives the same bytes.
    fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})


def plot_methods(results: list[DomainResults], path: Path) -> None:
    """One panel per domain: grouped bars of its two headline metrics (%) per method that ran,
    error bars = std over seeds."""
    # The default style, not the user's matplotlibrc, so that the figure is the same everywhere.
    with matplotlib.style.context("default"):
        widest = max((sum(r.ran for r in d.rows) for d in results), default=0)
        fig = Figure(figsize=(max(6.0, 1.3 * widest + 2), 4.5 * max(1, len(results))), dpi=DPI)
        if not results:
            ax = fig.add_subplot()
            ax.text(0.5, 0.5, "no domain evaluated yet", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        for i, d in enumerate(results):
            _method_panel(fig.add_subplot(len(results), 1, i + 1), d)
        fig.tight_layout()
        _save(fig, path)


def _method_panel(ax, d: DomainResults) -> None:
    ran = [r for r in d.rows if r.ran]
    width = 0.38
    for k, name in enumerate(d.spec.columns):
        xs = [i + (k - 0.5) * width for i in range(len(ran))]
        ys = [r.means[k] * 100 for r in ran]
        bars = ax.bar(xs, ys, width, label=name)
        # Values written on the bars, so that a 0% is seen as measured, not missing.
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=2)
        # Error bars only for runs over seeds; a single run has no spread to show.
        spread = [(x, y, r.stds[k] * 100) for x, y, r in zip(xs, ys, ran) if r.stds[k] is not None]
        if spread:
            ax.errorbar(*zip(*spread), fmt="none", ecolor="black", capsize=3)
    ax.set_xticks(range(len(ran)), [r.label for r in ran], rotation=25, ha="right", fontsize=8)
    ax.set_ylim(0, 115)
    ax.set_ylabel("%")
    ax.set_title(f"ColBench {d.domain}: {' and '.join(d.spec.columns)} per method (mean ± std over seeds)", fontsize=9)
    if ran:
        ax.legend(fontsize=8, ncols=2, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no method evaluated yet", ha="center", va="center", transform=ax.transAxes)


def plot_curves(panels: list[tuple[str, list[tuple[str, Path]]]], path: Path) -> None:
    """A grid of small panels, one per run, the training loss against the step (a line per seed
    for policies, train and eval for the base policy and critics)."""
    ncols = max(1, min(3, len(panels)))
    nrows = max(1, math.ceil(len(panels) / ncols))
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(4 * ncols, 3 * nrows), dpi=DPI)
        if not panels:
            ax = fig.add_subplot()
            ax.text(0.5, 0.5, "no training curves yet", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        for i, (title, lines) in enumerate(panels):
            ax = fig.add_subplot(nrows, ncols, i + 1)
            for name, tsv in lines:
                steps, values = read_curve(tsv)
                ax.plot(steps, values, label=name, marker="." if len(steps) < 10 else None)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("step", fontsize=8)
            ax.set_ylabel("loss", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=7)
        fig.tight_layout()
        _save(fig, path)
