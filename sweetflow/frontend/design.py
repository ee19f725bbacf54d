"""The `design` metric: how close an answer's page is to the target, in what a blank page lacks.

The `pixels` similarity rewards a page for the background it shares with the target, so a blank or
one-colour page scored above the page made from the task's description on most tasks. `design` is
a weighted mean of three terms, each in [0, 1] and 1 for the target itself (`WEIGHTS`):

- `pixels`: the pixel similarity of the two screenshots (`sweetflow.frontend.similarity`);
- `text`: the words the pages show (the text of `<body>` outside scripts and styles, lower-cased),
  compared as multisets: twice the shared words over all words (F1);
- `layout`: the pages' sections (header, navigation bar, banner, columns, cards, text, call to
  action, footer; read from the HTML as `sweetflow.frontend.outline` reads any page), compared as
  sequences: twice the sections matched in order over all sections (difflib's ratio).

A page without words or sections, blank or in any one colour, scores 0 on the last two. Both read
the page's markup, as a person reads what the page says and how it is divided; they are exact on
pages written like the generator's and approximate on others (CSS can hide text or move boxes).
The terms and their weights were chosen on properties alone, on tasks of other generator seeds than
the ones they were then checked on (docs/benchmark.md): the target scores 1, and a blank page, a
one-colour page and another task's target should score below the description's page on at least
95% of generated tasks. A missing screenshot or page scores 0.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher
from html.parser import HTMLParser

from sweetflow.frontend.outline import read_page
from sweetflow.frontend.similarity import load_image, pixel_similarity

WORD = re.compile(r"\w+")
# Layout weighs most: another task's target shares the generator's words and look, rarely its
# sections in order. Chosen on seeds 7 and 1 as the weights (in twelfths, each term at least two) whose
# least share of the four properties was highest.
WEIGHTS = {"pixels": 1 / 6, "text": 1 / 6, "layout": 2 / 3}


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


def page_sections(html: str | None) -> tuple[str, ...]:
    return tuple(block.kind for block in read_page(html).blocks)


def text_similarity(a: Counter[str], b: Counter[str]) -> float:
    total = a.total() + b.total()
    return 2 * (a & b).total() / total if total else 1.0


def layout_similarity(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    if not a and not b:
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def design_terms(pixels: float, answer_page: str | None, target_page: str) -> dict[str, float]:
    """The three terms of an answer page whose screenshot has the pixel similarity `pixels`."""
    return {
        "pixels": pixels,
        "text": text_similarity(page_words(answer_page), page_words(target_page)),
        "layout": layout_similarity(page_sections(answer_page), page_sections(target_page)),
    }


def weighted(terms: dict[str, float], weights: dict[str, float] = WEIGHTS) -> float:
    return sum(weights[name] * terms[name] for name in weights)


def design_from(pixels: float, answer_page: str | None, target_page: str) -> float:
    """The `design` score of an answer page whose screenshot has the pixel similarity `pixels`."""
    return weighted(design_terms(pixels, answer_page, target_page))


def design_scores(
    answers: list[bytes | None], targets: list[bytes], answer_pages: list[str | None], target_pages: list[str]
) -> list[float]:
    """One `design` score per (answer screenshot, target screenshot, answer page, target page); an
    answer without a screenshot scores 0."""
    images = {png: load_image(png) for png in {*targets, *(a for a in answers if a is not None)}}
    return [
        0.0 if a is None else design_from(pixel_similarity(images[a], images[t]), pa, pt)
        for a, t, pa, pt in zip(answers, targets, answer_pages, target_pages)
    ]
