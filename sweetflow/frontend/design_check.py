"""The design metrics on properties anyone can check, on generated design tasks.

For each task: the target against itself must score 1; and the page made from the description alone
(the win rate's reference) must score above each page that does no part of the task:

- a blank page (`<html><body></body></html>`: white);
- a constant gray page (Tailwind's gray-500 body);
- a page in the target's own most common colour (the one-colour page closest to it);
- another task's target (the next task's, the last task taking the first's).

The table gives, per metric, the least score of a target against itself and the share of tasks on
which the description's page beats each of these (a tie counting half). The JSON (`--out`) also keeps
each page's three terms per task, from which `--choose` redoes the choice of `design.WEIGHTS` without
rendering anything: among weights in twelfths that give each term at least two, the highest least
share of the four properties over the given checks' tasks, ties going to the weights nearest equal.

    python -m sweetflow.frontend.design_check [--tasks 120] [--seed 1] [--out check.json]
    python -m sweetflow.frontend.design_check --choose seed7.json seed1.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from sweetflow.core.params import read_params
from sweetflow.frontend.checks import reference_page
from sweetflow.frontend.design import WEIGHTS, design_terms, weighted
from sweetflow.frontend.params import FrontendParams
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.similarity import Similarity, load_image, win
from sweetflow.frontend.tasks import generate_frontend_tasks

BLANK = "<html><body></body></html>"
GRAY = "<html><body style='background:#6B7280'></body></html>"  # Tailwind 2's gray-500
ADVERSARIES = ("blank", "constant gray", "target's own colour", "another task's target")
PARTS = 12  # the weights are chosen in twelfths


def one_colour(png: bytes) -> str:
    """A page all in the screenshot's most common colour."""
    rgb = np.asarray(load_image(png), dtype=np.int64)
    common = int(np.bincount((rgb[..., 0] << 16 | rgb[..., 1] << 8 | rgb[..., 2]).ravel()).argmax())
    r, g, b = common >> 16, common >> 8 & 255, common & 255
    return f"<html><body style='background:rgb({r},{g},{b})'></body></html>"


def check(n_tasks: int, seed: int, params_file: Path) -> dict:
    p = read_params(FrontendParams, params_file, section="frontend").scoring
    _, tasks = generate_frontend_tasks(0, n_tasks, seed)
    targets = [t["ground_truth"] for t in tasks]
    references = [reference_page(t["problem_description"]) for t in tasks]
    with RenderPool(p.render) as pool:
        shots = pool.render_many(targets + references + [BLANK, GRAY], desc="targets and references")
        target_shots, reference_shots, (blank, gray) = shots[:n_tasks], shots[n_tasks:-2], shots[-2:]
        colours = [one_colour(png) for png in target_shots]
        colour_shots = dict(zip(dict.fromkeys(colours), pool.render_many(list(dict.fromkeys(colours)), desc="colours")))
    if any(s is None for s in shots) or any(s is None for s in colour_shots.values()):
        raise RuntimeError("a page failed to render; rerun on a less loaded machine or raise render.timeout_s")
    others = targets[1:] + targets[:1]
    other_shots = target_shots[1:] + target_shots[:1]
    pages = {
        "target": (target_shots, targets),
        "description's page": (reference_shots, references),
        "blank": ([blank] * n_tasks, [BLANK] * n_tasks),
        "constant gray": ([gray] * n_tasks, [GRAY] * n_tasks),
        "target's own colour": ([colour_shots[c] for c in colours], colours),
        "another task's target": (other_shots, others),
    }
    pixels = Similarity(p.similarity.model_copy(update={"metric": "pixels"}))
    by_pixels = {page: pixels(page_shots, target_shots) for page, (page_shots, _) in pages.items()}
    terms = {page: list(map(design_terms, by_pixels[page], htmls, targets)) for page, (_, htmls) in pages.items()}
    by_design = {page: list(map(weighted, page_terms)) for page, page_terms in terms.items()}
    out = {"tasks": n_tasks, "seed": seed, "metrics": {}, "terms": terms}
    for name, scores in (("pixels", by_pixels), ("design", by_design)):
        reference = scores["description's page"]
        out["metrics"][name] = {
            "least_target_score": min(scores["target"]),
            "mean": {page: sum(s) / n_tasks for page, s in scores.items()},
            "reference_beats": {a: sum(map(win, reference, scores[a])) / n_tasks for a in ADVERSARIES},
        }
    return out


def reference_beats(checks: list[dict], weights: dict[str, float]) -> dict[str, float]:
    """With these weights, the share of all the checks' tasks on which the description's page beats
    each page that does no part of the task (a tie counting half)."""
    wins = {a: 0.0 for a in ADVERSARIES}
    for result in checks:
        reference = [weighted(t, weights) for t in result["terms"]["description's page"]]
        for a in ADVERSARIES:
            wins[a] += sum(map(win, reference, (weighted(t, weights) for t in result["terms"][a])))
    return {a: w / sum(r["tasks"] for r in checks) for a, w in wins.items()}


def choose_weights(checks: list[dict], parts: int = PARTS, least: int = 2) -> list[tuple[dict[str, float], dict]]:
    """Every weighting in `parts`-ths giving each term at least `least`, best first: highest least
    share of the properties, then nearest to equal weights."""
    names, equal = list(WEIGHTS), [1 / len(WEIGHTS)] * len(WEIGHTS)
    ranked = []
    for i in range(least, parts + 1):
        for j in range(least, parts + 1 - i - least):
            weights = dict(zip(names, (i / parts, j / parts, (parts - i - j) / parts)))
            beats = reference_beats(checks, weights)
            ranked.append((-min(beats.values()), math.dist(list(weights.values()), equal), weights, beats))
    ranked.sort(key=lambda r: r[:2])
    return [(weights, beats) for _, _, weights, beats in ranked]


def table(result: dict) -> Table:
    out = Table(title=f"Design metrics on {result['tasks']} generated tasks (seed {result['seed']})")
    for column in ("metric", "target vs itself (least)", *(f"reference beats {a}" for a in ADVERSARIES)):
        out.add_column(column, justify="left" if column == "metric" else "right")
    for name, m in result["metrics"].items():
        out.add_row(name, f"{m['least_target_score']:.4f}", *(f"{m['reference_beats'][a]:.0%}" for a in ADVERSARIES))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=120, help="generated test tasks (default: 120)")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed (default: 1; the pipeline's is 0)")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"), help="the renderer of this params file")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON here")
    parser.add_argument("--choose", type=Path, nargs="+", help="choose the weights on these checks' JSON instead")
    args = parser.parse_args(argv)
    if args.choose:
        ranked = choose_weights([json.loads(path.read_text()) for path in args.choose])
        out = Table(title="Weights (pixels, text, layout), best first")
        for column in ("weights", *(f"reference beats {a}" for a in ADVERSARIES)):
            out.add_column(column, justify="left" if column == "weights" else "right")
        for weights, beats in ranked[:8]:
            shown = ", ".join(f"{w * PARTS:.0f}/{PARTS}" for w in weights.values())
            out.add_row(shown, *(f"{beats[a]:.1%}" for a in ADVERSARIES))
        Console().print(out)
        return 0
    result = check(args.tasks, args.seed, args.params)
    Console().print(table(result))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
