"""What an agent writes when it knows little: plain blocks, and a plain page from a description.

`plain_block(kind)` is a block of that kind with neutral colours and generic words, each read back
as its own kind (a banner has a picture, a call-to-action a button, cards a background of their
own). `page_from_description` is what the no_ask design agent answers with and what the design
expert starts from: the sections the description names, in its order, with the words it gives
(the site's name, section topics, footer links).
"""

from __future__ import annotations

import re
from dataclasses import replace

from sweetflow.frontend.page import Block, Button, Image, Item, Page

PLAIN_BUTTON_BG = "blue-600"
PLAIN_ITEM_TEXT = "A short description."


def plain_item(n: int) -> Item:
    return Item(f"Item {n}", PLAIN_ITEM_TEXT)


def plain_block(kind: str, title: str = "") -> Block:
    if kind == "header":
        return Block("header", "gray-800", "white", padding=6, heading=title or "Welcome", heading_size="3xl")
    if kind == "nav":
        return Block("nav", "white", "gray-800", padding=4, links=("Home", "About", "Contact"))
    if kind == "hero":
        return Block(
            "hero",
            None,
            "gray-900",
            padding=12,
            heading=title or "Welcome",
            heading_size="4xl",
            paragraphs=("We are glad you are here.",),
            image=Image(1200, 400),
        )
    if kind in ("columns", "cards"):
        return Block(
            kind,
            None,
            "gray-900",
            padding=8,
            columns=3,
            items=tuple(plain_item(n) for n in (1, 2, 3)),
            item_bg="white" if kind == "cards" else None,
        )
    if kind == "cta":
        return Block(
            "cta",
            "gray-100",
            "gray-900",
            padding=12,
            heading=title or "Get in touch",
            heading_size="2xl",
            buttons=(Button("Contact Us", PLAIN_BUTTON_BG),),
        )
    if kind == "footer":
        return Block("footer", "gray-800", "white", padding=6, paragraphs=("© 2024",))
    return Block(
        "text",
        None,
        "gray-900",
        padding=8,
        heading=title or "About Us",
        heading_size="2xl",
        paragraphs=("Learn more about what we do.",),
    )


# How a description announces each kind of section, checked in this order on each of its phrases:
# "a banner image with a call-to-action button" is a banner, "a call-to-action section" is no
# text section, "a large header image" is a banner under the header.
PHRASE_KINDS = (
    ("footer", ("footer",)),
    ("hero", ("banner", "hero", "image", "picture", "photo", "slideshow", "carousel")),
    ("cta", ("call-to-action", "call to action", "sign-up", "donation", "button")),
    ("cards", ("grid", "cards", "gallery", "listings", "showcase")),
    ("columns", ("column", "split")),
    ("header", ("header", "logo")),
    ("nav", ("navigation", "menu", "navbar")),
    ("text", ("section", "about", "information")),
)
PHRASE_BREAK = re.compile(r",\s*(?:and\s+)?|\.\s+|\s+and\s+(?=an?\s)", re.IGNORECASE)
COUNTS = {"two": 2, "three": 3, "four": 4, "2": 2, "3": 3, "4": 4}


def page_from_description(description: str) -> Page:
    """A plain page with the sections the description names, in the order it names them."""
    site, _, rest = description.partition(":")
    if not rest:
        site, rest = "", description
    name = re.sub(r"\s+(website|site)$", "", site.strip(), flags=re.IGNORECASE)
    body = re.split(r"\bdesign\b(?:\s+(?:with|featuring|including))?", rest, maxsplit=1)[-1]
    blocks: list[Block] = []
    for phrase in PHRASE_BREAK.split(body):
        kind = _kind_of(phrase)
        if kind and not (kind in ("header", "nav", "footer") and any(b.kind == kind for b in blocks)):
            blocks.append(_plain_for(kind, phrase, name))
    if not any(b.kind == "header" for b in blocks):
        blocks.insert(0, plain_block("header", name))
    return Page(blocks=tuple(blocks), bg="white")


def _kind_of(phrase: str) -> str | None:
    lower = phrase.lower()
    return next((kind for kind, words in PHRASE_KINDS if any(w in lower for w in words)), None)


def _plain_for(kind: str, phrase: str, site_name: str) -> Block:
    """The plain block of `kind`, with what the phrase says about it (topics, counts, links)."""
    lower = phrase.lower().strip()
    if kind == "header":
        links = plain_block("nav").links if "menu" in lower or "navigation" in lower else ()
        return replace(plain_block("header", site_name), links=links)
    if kind == "hero" and any(w in lower for w in ("button", "call-to-action")):
        return replace(plain_block("hero"), buttons=plain_block("cta").buttons)
    if kind == "columns":
        count = next((n for word, n in COUNTS.items() if re.search(rf"\b{word}[- ]column", lower)), 2)
        topics = _titles(lower.split(" with ", 1)[1]) if " with " in lower else []
        titles = [topics[k] if k < len(topics) else f"Item {k + 1}" for k in range(count)]
        return replace(plain_block("columns"), columns=count, items=tuple(Item(t, PLAIN_ITEM_TEXT) for t in titles))
    if kind == "cards":
        topic = re.search(r"\b(?:of|showing|for)\s+(.+)$", lower)
        return replace(
            plain_block("cards"), heading=_title(topic.group(1)) if topic else "Featured", heading_size="2xl"
        )
    if kind == "text":
        topic = re.search(r"\b(?:about|on|for|to)\s+(.+)$", lower)
        return plain_block("text", _title(topic.group(1)) if topic else "")
    if kind == "footer":
        links = _titles(lower.split(" links to ", 1)[1]) if " links to " in lower else []
        return replace(plain_block("footer"), links=tuple(links))
    return plain_block(kind)


def _titles(text: str) -> list[str]:
    return [_title(t) for t in re.split(r",\s*|\s+and\s+", text) if t.strip()]


def _title(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.strip(" .").split())
