"""The report's plots: the headline metrics per method, and the training curves."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.style
from matplotlib.figure import Figure

from sweetflow.report.read import DomainResults, read_curve

DPI = 100


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
    for k, name in enumerate(d.report.columns):
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
    metrics = " and ".join(d.report.columns)
    ax.set_title(f"ColBench {d.domain}: {metrics} per method (mean ± std over seeds)", fontsize=9)
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


def write_method_table(d: DomainResults, path: Path) -> None:
    """The domain's methods that ran, one row each with its two headline metrics (%), as CSV: the data
    of dvc.yaml's side-by-side plots, which `dvc plots diff` compares across experiments."""
    a, b = d.report.columns
    lines = [f"method,{a},{b}"]
    lines += [f"{r.method},{r.means[0] * 100:.2f},{r.means[1] * 100:.2f}" for r in d.rows if r.ran]
    path.write_text("\n".join(lines) + "\n")
