"""Pictures of the frontend's test dialogues for docs/: a method's final page beside its target.

    .venv/bin/python scripts/frontend_pictures.py --method rft --quantile 0.5 --out docs/screenshots

For each --method, picks the test episode of its first seed whose similarity is at --quantile among
that seed's episodes, renders its final page and the task's target with the run's renderer
(params `frontend.scoring.render`) and writes `frontend-<method>-q<NN>.png`: the target on the left,
the page on the right, each cut to the first viewport. Run it in a workspace that holds the
frontend's evaluations (after `make repro-frontend`); it reads the test split's outputs only.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import polars as pl
from PIL import Image, ImageDraw

from sweetflow.core.definition import output_of
from sweetflow.core.tables import EPISODE_FILES, task_file
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.simulators import page_snippet
from sweetflow.params import load_params
from sweetflow.report.episodes import read_episodes

PANEL_WIDTH = 640
CAPTION_HEIGHT = 28


def pick(episodes: pl.DataFrame, quantile: float) -> dict:
    """The episode of the first seed at `quantile` of its similarities (an episode that did not finish
    counts as 0; ties in task order)."""
    first = episodes["seed_index"].drop_nulls().min()
    seed = episodes if first is None else episodes.filter(pl.col("seed_index") == first)
    ranked = seed.with_columns(pl.col("reward").fill_null(0.0)).sort(["reward", "task_id"])
    return ranked.row(min(int(quantile * ranked.height), ranked.height - 1), named=True)


def panel(png: bytes | None, viewport: tuple[int, int]) -> Image.Image:
    """The first viewport of a screenshot, scaled to PANEL_WIDTH; grey where there is no page."""
    width, height = PANEL_WIDTH, PANEL_WIDTH * viewport[1] // viewport[0]
    if png is None:
        return Image.new("RGB", (width, height), (200, 200, 200))
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.crop((0, 0, image.width, min(image.height, image.width * viewport[1] // viewport[0])))
    return image.resize((width, image.height * width // image.width))


def side_by_side(target: Image.Image, page: Image.Image, captions: tuple[str, str]) -> Image.Image:
    height = max(target.height, page.height) + CAPTION_HEIGHT
    out = Image.new("RGB", (2 * PANEL_WIDTH + 8, height), (255, 255, 255))
    draw = ImageDraw.Draw(out)
    for x, image, caption in ((0, target, captions[0]), (PANEL_WIDTH + 8, page, captions[1])):
        draw.text((x + 6, 8), caption, fill=(0, 0, 0))
        out.paste(image, (x, CAPTION_HEIGHT))
    draw.rectangle((PANEL_WIDTH, 0, PANEL_WIDTH + 7, height), fill=(60, 60, 60))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--method", nargs="+", required=True, help="evaluated methods (data/frontend/evaluations/<method>)"
    )
    parser.add_argument("--quantile", type=float, default=0.5, help="which episode: 0 the worst, 1 the best")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    render = load_params().frontend.scoring.render
    test = output_of("tasks", "frontend", file=task_file("test"))
    tasks = {t["task_id"]: t for t in pl.read_parquet(test).to_dicts()}
    # Every method's test episodes lie beside the references' scores, each in its own directory.
    evaluations = output_of("score_references", "frontend").parent
    args.out.mkdir(parents=True, exist_ok=True)
    with RenderPool(render) as pool:
        for method in args.method:
            episodes = read_episodes(evaluations / method)
            if episodes is None:
                raise SystemExit(f"{evaluations / method}: no {EPISODE_FILES}")
            row = pick(episodes, args.quantile)
            task = tasks[row["task_id"]]
            html = page_snippet(row["answer"] or "")
            shot = pool.render(html) if html else None
            viewport = (render.viewport_width, render.viewport_height)
            similarity = f"similarity {row['reward']:.3f}" + ("" if shot else " (no page: grey)")
            seed = "" if row["seed_index"] is None else f", seed {row['seed_index']}"
            picture = side_by_side(
                panel(task["target_png"], viewport),
                panel(shot, viewport),
                (
                    f"target ({row['task_id']}; description's page {task['reference_similarity']:.3f})",
                    f"{method}{seed}: final page, {similarity}",
                ),
            )
            path = args.out / f"frontend-{method}-q{round(args.quantile * 100):02d}.png"
            picture.save(path, optimize=True)
            print(path, row["task_id"], similarity)


if __name__ == "__main__":
    main()
