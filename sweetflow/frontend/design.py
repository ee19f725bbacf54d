"""The `design` metric: how close an answer's page is to the target, in what a blank page lacks.

The `pixels` similarity rewards a page for the background it shares with the target, so a blank or
one-colour page scored above the page made from the task's description on most tasks. `design` is
the mean of three terms, each in [0, 1] and 1 for the target itself:

- `pixels`: the pixel similarity of the two screenshots (`sweetflow.frontend.similarity`);
- `content`: where the pages have content. Each screenshot (top-left on a common canvas, as for
  `pixels`; where a page does not reach there is no content) is cut into `CELL` x `CELL` px cells; a
  cell's ink is the standard deviation of its grey levels over `INK_FULL` (text, borders, edges of
  boxes and pictures; 0 on a flat colour), capped at 1. Ink is summed over `BLOCK` x `BLOCK` cells, so that content a few lines off still
  meets, and the two maps are compared as weighted Jaccard: sum of minima over sum of maxima.
  A page without content, blank or in any one colour, scores 0;
- `text`: the words the pages show (the text of `<body>` outside scripts and styles, lower-cased),
  compared as multisets: twice the shared words over all words (F1). A page without words scores 0.

A missing screenshot or page scores 0, as for the other metrics.
"""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

import numpy as np
from PIL import Image

from sweetflow.frontend.similarity import load_image, pixel_similarity

CELL = 8  # px: a cell holds a line of small text
INK_FULL = 16.0  # grey levels (of 255): a cell this varied or more counts as fully inked
BLOCK = 4  # cells: content within 32 px counts as in the same place
WORD = re.compile(r"\w+")


class _Words(HTMLParser):
    """The words of a page's text, outside elements that show none."""

    HIDDEN = {"head", "script", "style", "template", "noscript", "title"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.words: Counter[str] = Counter()
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in self.HIDDEN

    def handle_endtag(self, tag):
        if tag in self.HIDDEN and self._hidden:
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden:
            self.words.update(WORD.findall(data.lower()))


def page_words(html: str | None) -> Counter[str]:
    if not html:
        return Counter()
    parser = _Words()
    parser.feed(html)
    parser.close()
    return parser.words


def text_similarity(a: Counter[str], b: Counter[str]) -> float:
    total = a.total() + b.total()
    return 2 * (a & b).total() / total if total else 1.0


def _ink(image: Image.Image, width: int, height: int) -> np.ndarray:
    """Ink per BLOCK x BLOCK cells of the image, top-left on a width x height canvas without any."""
    grey = np.asarray(image.convert("L"), dtype=np.float64)
    # The last cells of a side that is no multiple of CELL repeat its edge: a page's end is no ink.
    grey = np.pad(grey, ((0, -grey.shape[0] % CELL), (0, -grey.shape[1] % CELL)), mode="edge")
    cells = grey.reshape(grey.shape[0] // CELL, CELL, grey.shape[1] // CELL, CELL).std(axis=(1, 3))
    step = CELL * BLOCK
    ink = np.zeros((-(-height // step) * BLOCK, -(-width // step) * BLOCK))
    ink[: cells.shape[0], : cells.shape[1]] = np.minimum(cells / INK_FULL, 1.0)
    return ink.reshape(ink.shape[0] // BLOCK, BLOCK, ink.shape[1] // BLOCK, BLOCK).sum(axis=(1, 3))


def content_similarity(a: Image.Image, b: Image.Image) -> float:
    width, height = max(a.width, b.width), max(a.height, b.height)
    ink_a, ink_b = _ink(a, width, height), _ink(b, width, height)
    most = np.maximum(ink_a, ink_b).sum()
    return float(np.minimum(ink_a, ink_b).sum() / most) if most > 0 else 1.0


def design_similarity(a: Image.Image, b: Image.Image, words_a: Counter[str], words_b: Counter[str]) -> float:
    """The `design` metric (module docstring) of two screenshots and their pages' words."""
    return (pixel_similarity(a, b) + content_similarity(a, b) + text_similarity(words_a, words_b)) / 3


def design_scores(
    answers: list[bytes | None], targets: list[bytes], answer_pages: list[str | None], target_pages: list[str]
) -> list[float]:
    """One `design` score per (answer screenshot, target screenshot, answer page, target page); an
    answer without a screenshot scores 0."""
    images = {png: load_image(png) for png in {*targets, *(a for a in answers if a is not None)}}
    words = {page: page_words(page) for page in {*target_pages, *answer_pages}}
    return [
        0.0 if a is None else design_similarity(images[a], images[t], words[pa], words[pt])
        for a, t, pa, pt in zip(answers, targets, answer_pages, target_pages)
    ]
