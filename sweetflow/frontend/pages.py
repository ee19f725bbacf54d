"""Procedural generator of ColBench-style frontend pages and of their vague descriptions.

A page is drawn from a site type's vocabulary (`sweetflow.frontend.vocab`) and a palette of two
Tailwind 2.2.19 colour families (the eight the CDN build ships: gray, red, yellow, green, blue,
indigo, purple, pink): header, navigation (its own bar, inside the header or none), an optional
banner with a picture, one to three content sections (columns, cards, text), an optional
call-to-action and an optional footer, each with its colours, alignment, spacing and sizes.

The description names the sections loosely, as ColBench's do ("Bakery Website: A warm design with
a top navigation bar, a large banner image, a grid of baked goods and a footer with links"), never
the colours or the exact texts: an agent has to show pages and listen to learn those.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from sweetflow.frontend.page import Block, Button, Image, Item, Page, shade_of
from sweetflow.frontend.vocab import ADJECTIVES, COPYRIGHT, SITES, Site

FAMILIES = ("red", "yellow", "green", "blue", "indigo", "purple", "pink")  # plus gray, the neutral
HERO_IMAGES = ((1200, 400), (1600, 600), (1200, 500), (1600, 900), (800, 400))
LOGOS = ((100, 50), (120, 60), (150, 50), (80, 80))
NUMBER_WORDS = {2: "two", 3: "three", 4: "four"}


@dataclass(frozen=True)
class Palette:
    primary: str  # a colour family, e.g. "green"
    accent: str  # another one, for buttons and highlights

    def pick(self, rng: random.Random, choices: tuple[str, ...]) -> str | None:
        """One of `choices`, where "p-600" means the primary family at 600, "a-500" the accent, and
        "none" no colour at all."""
        return self.resolve(rng.choice(choices))

    def resolve(self, choice: str) -> str | None:
        if choice == "none":
            return None
        family, _, shade = choice.partition("-")
        return {"p": f"{self.primary}-{shade}", "a": f"{self.accent}-{shade}"}.get(family, choice)

    def text_on(self, rng: random.Random, bg: str | None) -> str:
        """A text colour that reads well on `bg` (no colour means the light page behind it)."""
        shade = shade_of(bg)
        if shade is not None and shade >= 500:
            return self.pick(rng, ("white", "gray-100", "p-100", "p-200"))
        return self.pick(rng, ("gray-700", "gray-800", "gray-900", "p-800", "p-900"))


@dataclass(frozen=True)
class GeneratedPage:
    site: Site
    page: Page
    description: str


def generate_page(rng: random.Random) -> GeneratedPage:
    site = rng.choice(SITES)
    primary = rng.choice(FAMILIES)
    palette = Palette(primary, rng.choice([f for f in FAMILIES if f != primary]))
    name = rng.choice(site.names)
    centred = rng.random() < 0.5  # the page's usual alignment; some blocks differ from it

    def align() -> str:
        usual = "center" if centred else "left"
        return usual if rng.random() < 0.75 else ("left" if centred else "center")

    nav_links = ("Home", *_ordered_sample(rng, site.nav, rng.randint(2, 4)))
    nav_mode = rng.choices(("below", "above", "inline", "none"), weights=(55, 15, 20, 10))[0]
    blocks = [_header(rng, site, palette, name, align(), nav_links if nav_mode == "inline" else ())]
    if nav_mode in ("below", "above"):
        nav = _nav(rng, palette, nav_links)
        blocks.insert(0 if nav_mode == "above" else 1, nav)
    if rng.random() < 0.8:
        blocks.append(_hero(rng, site, palette, align()))
    topics = list(site.topics)
    rng.shuffle(topics)
    for kind in rng.sample(("columns", "cards", "text"), rng.randint(1, 3)):
        blocks.append(SECTION_DRAWERS[kind](rng, site, palette, align(), topics))
    if rng.random() < 0.6:
        blocks.append(_cta(rng, site, palette, align()))
    if rng.random() < 0.9:
        blocks.append(_footer(rng, site, palette, name, align()))
    page = Page(
        blocks=tuple(blocks),
        bg=palette.pick(rng, ("white", "gray-50", "gray-100", "p-50")),
        font=rng.choices(("sans", "serif", "mono"), weights=(6, 3, 1))[0],
    )
    return GeneratedPage(site, page, describe(page, site, rng))


def _ordered_sample(rng: random.Random, pool: tuple, k: int) -> tuple:
    """k entries of `pool`, in the pool's order (menus list things in a sensible order)."""
    return tuple(pool[i] for i in sorted(rng.sample(range(len(pool)), min(k, len(pool)))))


def _header(rng, site: Site, palette: Palette, name: str, align: str, links: tuple[str, ...]) -> Block:
    bg = palette.pick(rng, ("p-600", "p-700", "p-800", "gray-800", "gray-900", "white", "p-100"))
    return Block(
        kind="header",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=align,
        padding=rng.choice((4, 6, 8)),
        heading=name,
        heading_size=rng.choice(("2xl", "3xl", "4xl")),
        paragraphs=(rng.choice(site.taglines),) if rng.random() < 0.5 else (),
        links=links,
        image=Image(*rng.choice(LOGOS)) if rng.random() < 0.4 else None,
    )


def _nav(rng, palette: Palette, links: tuple[str, ...]) -> Block:
    bg = palette.pick(rng, ("white", "gray-100", "p-700", "gray-800", "p-50"))
    return Block(
        kind="nav",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=rng.choice(("left", "center", "right")),
        padding=rng.choice((3, 4)),
        links=links,
    )


def _buttons(rng, site: Site, palette: Palette, behind: str | None, most: int) -> tuple[Button, ...]:
    labels = rng.sample(site.buttons, rng.randint(1, most))
    choices = [c for c in ("a-400", "a-500", "a-600", "p-500", "p-600", "white") if palette.resolve(c) != behind]
    colour = palette.pick(rng, tuple(choices))
    return tuple(Button(label, colour) for label in labels)


def _hero(rng, site: Site, palette: Palette, align: str) -> Block:
    bg = palette.pick(rng, ("p-50", "p-100", "gray-900", "p-900", "white", "none"))
    heading, paragraph = rng.choice(site.heroes)
    return Block(
        kind="hero",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=align,
        padding=rng.choice((12, 16, 20)),
        heading=heading,
        heading_size=rng.choice(("4xl", "5xl")),
        paragraphs=(paragraph,),
        buttons=_buttons(rng, site, palette, bg, 2) if rng.random() < 0.8 else (),
        image=Image(*rng.choice(HERO_IMAGES)),
    )


def _columns(rng, site: Site, palette: Palette, align: str, topics: list) -> Block:
    n = rng.choices((2, 3, 4), weights=(5, 4, 1))[0]
    chosen = [topics.pop() for _ in range(min(n, len(topics) - 1))]
    bg = palette.pick(rng, ("none", "white", "gray-50", "p-50"))
    titled = rng.random() < 0.4
    return Block(
        kind="columns",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=align,
        padding=rng.choice((8, 12)),
        heading=rng.choice(site.cards_titles) if titled else "",
        heading_size=rng.choice(("2xl", "3xl")) if titled else "",
        columns=len(chosen),
        items=tuple(Item(title, text) for title, text in chosen),
    )


def _cards(rng, site: Site, palette: Palette, align: str, topics: list) -> Block:
    columns = rng.choice((2, 3, 4))
    count = rng.choice([n for n in (columns, 2 * columns) if n <= len(site.cards)])
    bg = palette.pick(rng, ("none", "gray-100", "p-50"))
    return Block(
        kind="cards",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=align,
        padding=rng.choice((8, 12)),
        heading=rng.choice(site.cards_titles),
        heading_size=rng.choice(("2xl", "3xl")),
        columns=columns,
        items=tuple(Item(title, text) for title, text in rng.sample(site.cards, count)),
        item_bg=palette.pick(rng, ("white", "gray-50", "p-100")),
        item_images=rng.random() < 0.5,
    )


def _text(rng, site: Site, palette: Palette, align: str, topics: list) -> Block:
    heading, paragraph = topics.pop()
    bg = palette.pick(rng, ("none", "white", "gray-50", "p-50"))
    return Block(
        kind="text",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=align,
        padding=rng.choice((8, 12)),
        heading=heading,
        heading_size=rng.choice(("2xl", "3xl")),
        paragraphs=(paragraph,),
    )


SECTION_DRAWERS: dict[str, Callable[..., Block]] = {"columns": _columns, "cards": _cards, "text": _text}


def _cta(rng, site: Site, palette: Palette, align: str) -> Block:
    bg = palette.pick(rng, ("p-500", "p-600", "p-700", "a-500", "a-600", "gray-900", "p-100"))
    heading, paragraph = rng.choice(site.ctas)
    return Block(
        kind="cta",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=align,
        padding=rng.choice((10, 12, 16)),
        heading=heading,
        heading_size=rng.choice(("2xl", "3xl")),
        paragraphs=(paragraph,),
        buttons=_buttons(rng, site, palette, bg, 1),
    )


def _footer(rng, site: Site, palette: Palette, name: str, align: str) -> Block:
    bg = palette.pick(rng, ("gray-800", "gray-900", "p-800", "p-900", "white", "gray-200"))
    return Block(
        kind="footer",
        bg=bg,
        text=palette.text_on(rng, bg),
        align=align,
        padding=rng.choice((4, 6, 8)),
        paragraphs=(rng.choice(COPYRIGHT).format(name=name),),
        links=_ordered_sample(rng, site.footer_links, rng.randint(2, 4)) if rng.random() < 0.7 else (),
    )


# --- descriptions --------------------------------------------------------------------------------


def describe(page: Page, site: Site, rng: random.Random) -> str:
    """ "<Site> Website: A <adjective> design with <its parts, loosely, in page order>." Every
    part starts with "a", so that a reader can tell where one ends ("... with x and y and a footer")."""
    parts = [_describe_block(block, site, rng) for block in page.blocks]
    listed = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    suffix = rng.choice((" Website", " Website", " Site", ""))
    adjective = rng.choice(ADJECTIVES)
    article = "An" if adjective[0] in "aeiou" else "A"
    return f"{site.kind}{suffix}: {article} {adjective} design with {listed}."


def _describe_block(block: Block, site: Site, rng: random.Random) -> str:
    if block.kind == "header":
        if block.links:
            return rng.choice(("a header with the name and the menu side by side", "a header holding the menu"))
        if block.image:
            return rng.choice(("a logo at the top", "a header with a logo"))
        return rng.choice(("a header with the company name", "a bold header", "a simple header"))
    if block.kind == "nav":
        return rng.choice(("a navigation bar", "a top navigation bar", "a simple menu bar"))
    if block.kind == "hero":
        with_button = " with a call-to-action button" if block.buttons and rng.random() < 0.5 else ""
        return rng.choice(("a large banner image", "a full-width hero image", "a big welcome picture")) + with_button
    if block.kind == "columns":
        count = f"{NUMBER_WORDS[block.columns]}-column" if rng.random() < 0.6 else "multi-column"
        topics = [item.heading.lower() for item in block.items[:2]]
        return f"a {count} layout with " + " and ".join(topics) if rng.random() < 0.5 else f"a {count} layout"
    if block.kind == "cards":
        return rng.choice(("a grid of {}", "a set of cards showing {}", "a section of {} in a grid")).format(
            site.cards_noun
        )
    if block.kind == "text":
        return rng.choice(("a section about {}", "a short section on {}", "a section for {}")).format(
            block.heading.lower()
        )
    if block.kind == "cta":
        return rng.choice(("a call-to-action section", "a call-to-action panel", "a prominent call-to-action"))
    if block.links and rng.random() < 0.7:
        return "a footer with links to " + " and ".join(link.lower() for link in block.links[:2])
    return rng.choice(("a footer", "a simple footer", "a footer with the copyright"))
