"""How the report shows frontend results: similarity and win rate, answers without a page and
dialogue lengths, and on the site each design dialogue's pages, rendered as the evaluations render
them (the episodes keep the HTML, not its screenshot) and saved as small JPEGs beside the pages.
Rendering is all the report runs: it needs the pictures to show them."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from sweetflow.dialogue import AGENT
from sweetflow.domain_report import BehaviourColumn, DomainReport
from sweetflow.frontend.params import FrontendParams, FrontendScoringParams
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.similarity import Similarity
from sweetflow.frontend.simulators import page_snippet

# Design dialogues rendered per method: each turn's page is a browser render, and a trained frontend
# has 500 test tasks x seeds x up to 10 turns. The first ones of the first seed show what a method does.
MAX_DESIGN_DIALOGUES = 20
THUMB_WIDTH = 480  # px of a page's picture on the site; a click opens the same file


@dataclass
class Pictures:
    """Frontend pages rendered once each and saved under `<site>/img/`; similarities to each target."""

    site: Path
    scoring: FrontendScoringParams
    _pool: object = None
    _similarity: object = None
    _saved: dict = field(default_factory=dict)  # page HTML -> its picture's site path (None: it did not render)
    _scores: dict = field(default_factory=dict)  # (page HTML, target PNG) -> their similarity

    def __enter__(self) -> Pictures:
        self._pool = RenderPool(self.scoring.render).__enter__()
        self._similarity = Similarity(self.scoring.similarity)
        (self.site / "img").mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc) -> None:
        self._pool.__exit__(*exc)

    def save(self, png: bytes | None) -> str | None:
        """The site-relative path of a PNG's thumbnail, written once per distinct picture."""
        if png is None:
            return None
        name = f"img/{hashlib.sha256(png).hexdigest()[:20]}.jpg"
        path = self.site / name
        if not path.exists():
            image = Image.open(io.BytesIO(png)).convert("RGB")
            image.thumbnail((THUMB_WIDTH, THUMB_WIDTH * 8))
            image.save(path, "JPEG", quality=80, optimize=True)
        return name

    def score(self, pages: list[tuple[str, bytes | None]]) -> None:
        """Render, save and score against its target each (page HTML, target PNG) not done yet, all in
        one batch: the pool's tabs stay busy, where a dialogue at a time left them waiting on its last page."""
        todo = [
            (h, t)
            for h, t in dict.fromkeys(pages)
            if h not in self._saved or (t is not None and (h, t) not in self._scores)
        ]
        htmls = list(dict.fromkeys(h for h, _ in todo))
        shots = dict(zip(htmls, self._pool.render_many(htmls, desc=None)))
        self._saved.update((h, self.save(shots[h])) for h in htmls)
        scored = [(h, t) for h, t in todo if t is not None]
        self._scores.update(zip(scored, self._similarity([shots[h] for h, _ in scored], [t for _, t in scored])))

    def pages(self, htmls: list[str | None], target: bytes | None) -> list[tuple[str | None, float | None]]:
        """(picture, similarity to the target) of each page; (None, None) for a message with no page."""
        self.score([(h, target) for h in htmls if h is not None])
        return [(None, None) if h is None else (self._saved[h], self._scores.get((h, target))) for h in htmls]


class FrontendReport(DomainReport):
    name = "frontend"
    title = "Frontend design"
    headline = ("similarity", "win_rate")
    columns = ("similarity", "win rate")
    goal_metric = "win_rate"
    description = (
        "mean visual similarity of the final page to the target (×100) and % of tasks on which the page is "
        "closer to the target than the page made from the description alone (a tie is half a win)"
    )
    paper = {"zero_shot": (72.4, 33.8), "rft": (75.2, 38.6), "mtdpo": (76.9, 42.8), "sweet": (77.7, 48.2)}
    gpt4o = (78.1, 50.0)
    episode_column = "reward"
    episode_measure = "similarity"
    paired_wins = True
    behaviour_note = (
        "No page: answers that show no page that renders (scored 0). Context full: dialogues that filled the "
        "model's context before an answer (the last message is then the answer). Shares of all test episodes."
    )
    behaviour_columns = (
        BehaviourColumn("moved_from_base", "moved from base (%)"),
        BehaviourColumn("no_page", "no page (%)"),
        BehaviourColumn("context_full", "context full (%)"),
        BehaviourColumn("mean_turns", "mean turns", share=False),
    )
    dialogue_limit = MAX_DESIGN_DIALOGUES

    def completed_outcome(self, reward: float, success: bool | None) -> str:
        return "similarity ≥ 0.9" if reward >= 0.9 else "similarity 0.5–0.9" if reward >= 0.5 else "similarity < 0.5"

    def pictures(self, site: Path, p: FrontendParams) -> Pictures:
        """The run's renderer and similarity (`p.scoring`), drawing into `<site>/img/`."""
        return Pictures(site, p.scoring)

    def task_details(self, task: dict, pictures: Pictures | None) -> dict:
        """The target page's picture."""
        return {} if pictures is None else {"target": pictures.save(task.get("target_png"))}

    def prepare(self, episodes: list[tuple[dict, dict, list[dict]]], pictures: Pictures | None) -> None:
        """Every page the episodes show, rendered and scored at once."""
        if pictures is not None:
            shown = [(h, task.get("target_png")) for task, row, turns in episodes for h in _pages(row, turns)]
            pictures.score([(h, target) for h, target in shown if h is not None])

    def episode_details(self, task: dict, row: dict, turns: list[dict], pictures: Pictures | None) -> dict:
        """Each turn's page and the final page, pictured, with their similarities to the target."""
        if pictures is None:
            return {}
        htmls = _pages(row, turns)[:-1]
        pictured = []
        for turn, (picture, sim) in zip(turns, pictures.pages(htmls, task.get("target_png"))):
            pictured.append(turn if picture is None else {**turn, "page": picture, "similarity": sim})
        final = pictures.pages(_pages(row, turns)[-1:], task.get("target_png"))[0]
        return {"turns": pictured, "final_page": final[0], "final_similarity": final[1]}


def _pages(row: dict, turns: list[dict]) -> list[str | None]:
    """The page of each turn (None where the turn shows none), then the final answer's."""
    return [page_snippet(t["text"]) if t["role"] == AGENT else None for t in turns] + [
        page_snippet(row["answer"] or "")
    ]


REPORT = FrontendReport()
