"""The page model shared by the generator, the comparison and the scripted design agents.

A `Page` is what a person notices on a ColBench-style site: a body (background, font) and a
sequence of `Block`s — header, navigation bar, banner ("hero"), columns, cards, text section,
call-to-action, footer — each with its colours, alignment, spacing, title, texts, links, buttons,
picture and, for columns and cards, its items. `to_html` writes a page as Tailwind CSS 2.2.19 HTML
in the style of ColBench's targets; `sweetflow.frontend.outline.read_page` reads any HTML back into
this model (exactly for pages written here, approximately for others).

Colours are Tailwind colour names without their utility prefix: "green-600", "white"; None means
the block sets none (it shows what is behind it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from html import escape

TAILWIND_CSS = "https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css"
PICSUM = "https://picsum.photos/id/48/{w}/{h}"

# The HTML tag of a block kind; the other kinds ("hero", "columns", "cards", "text", "cta") are <section>s.
TAGS = {"header": "header", "nav": "nav", "footer": "footer"}
ALIGNMENTS = ("left", "center", "right")
FONTS = ("sans", "serif", "mono")
CARD_IMAGE = (400, 300)  # picsum size of a card's picture; cards only say whether they have one


@dataclass(frozen=True)
class Image:
    """A picsum.photos picture; (0, 0) when the size is unknown (a picture from elsewhere)."""

    width: int
    height: int


@dataclass(frozen=True)
class Button:
    label: str
    bg: str | None = None


@dataclass(frozen=True)
class Item:
    """One column or card: a title and its text."""

    heading: str = ""
    text: str = ""


@dataclass(frozen=True)
class Block:
    kind: str
    bg: str | None = None
    text: str | None = None  # text colour
    align: str = "left"
    padding: int = 0  # vertical padding, in Tailwind spacing units (py-N)
    heading: str = ""
    heading_size: str = ""  # Tailwind font size of the title: "xl", "3xl", ...
    paragraphs: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    buttons: tuple[Button, ...] = ()
    image: Image | None = None
    columns: int = 0  # grid columns of the items; 0 when the block has no items
    items: tuple[Item, ...] = ()
    item_bg: str | None = None
    item_images: bool = False


@dataclass(frozen=True)
class Page:
    blocks: tuple[Block, ...] = ()
    bg: str | None = None
    font: str = "sans"


# --- JSON ----------------------------------------------------------------------------------------


def page_to_json(page: Page) -> str:
    return json.dumps(asdict(page), ensure_ascii=False, separators=(",", ":"))


def page_from_json(text: str) -> Page:
    data = json.loads(text)
    return Page(
        blocks=tuple(_block_from_dict(b) for b in data["blocks"]),
        bg=data["bg"],
        font=data["font"],
    )


def _block_from_dict(data: dict) -> Block:
    image = data["image"]
    return Block(
        **{
            **data,
            "paragraphs": tuple(data["paragraphs"]),
            "links": tuple(data["links"]),
            "buttons": tuple(Button(**b) for b in data["buttons"]),
            "image": Image(**image) if image else None,
            "items": tuple(Item(**i) for i in data["items"]),
        }
    )


# --- HTML ----------------------------------------------------------------------------------------


def to_html(page: Page) -> str:
    """The page as a complete HTML document, laid out like ColBench's targets (no <head>; the
    stylesheet link right after <html>)."""
    body_classes = " ".join(filter(None, [_bg(page.bg), f"font-{page.font}"]))
    lines = ["<html>", f'<link href="{TAILWIND_CSS}" rel="stylesheet">', f'<body class="{body_classes}">']
    for block in page.blocks:
        lines += _block_html(block)
    lines += ["</body>", "</html>"]
    return "\n".join(lines) + "\n"


def _bg(colour: str | None) -> str:
    return f"bg-{colour}" if colour else ""


def _fg(colour: str | None) -> str:
    return f"text-{colour}" if colour else ""


def _text(value: str) -> str:
    return escape(value, quote=False)


def _classes(*names: str) -> str:
    return " ".join(n for n in names if n)


def _picture(image: Image, classes: str, alt: str) -> str:
    width, height = (image.width, image.height) if image.width and image.height else (1200, 400)
    return f'<img src="{PICSUM.format(w=width, h=height)}" alt="{alt}" class="{classes}">'


def _block_html(block: Block) -> list[str]:
    """Every block is written the same way (picture, title, paragraphs, items, buttons, links), so
    that any combination of fields reads back as written; the kind picks the tag and a few sizes."""
    tag = TAGS.get(block.kind, "section")
    centred = block.align == "center"
    align = {"center": "text-center", "right": "text-right"}.get(block.align, "")
    padding = f"py-{block.padding}" if block.padding else ""
    out = [f'  <{tag} class="{_classes(_bg(block.bg), _fg(block.text), padding, "px-4", align)}">']
    if block.image:
        if block.kind == "header":
            classes = _classes("h-12", "mx-auto" if centred else "", "mb-2")
            out.append("    " + _picture(block.image, classes, "Logo"))
        else:
            height = "h-96" if block.image.height >= 500 else "h-64"
            out.append("    " + _picture(block.image, f"w-full {height} object-cover mb-6", "Banner"))
    if block.heading:
        level = "h1" if block.kind in ("header", "hero") else "h2"
        size = f"text-{block.heading_size}" if block.heading_size else ""
        out.append(f'    <{level} class="{_classes(size, "font-bold mb-4")}">{_text(block.heading)}</{level}>')
    out += [f'    <p class="mb-4">{_text(p)}</p>' for p in block.paragraphs]
    if block.items:
        out.append(f'    <div class="grid grid-cols-{max(block.columns, 1)} gap-6">')
        for item in block.items:
            card = _classes(_bg(block.item_bg), "rounded shadow p-4" if block.item_bg else "")
            out.append(f'      <div class="{card}">' if card else "      <div>")
            if block.item_images:
                out.append("        " + _picture(Image(*CARD_IMAGE), "w-full h-40 object-cover mb-4", "Picture"))
            if item.heading:
                out.append(f'        <h3 class="text-xl font-bold mb-2">{_text(item.heading)}</h3>')
            if item.text:
                out.append(f"        <p>{_text(item.text)}</p>")
            out.append("      </div>")
        out.append("    </div>")
    if block.buttons:
        out.append('    <div class="mt-4 space-x-4">')
        for button in block.buttons:
            classes = _classes(_bg(button.bg), _fg(readable_on(button.bg)), "font-bold py-2 px-6 rounded")
            out.append(f'      <button class="{classes}">{_text(button.label)}</button>')
        out.append("    </div>")
    if block.links:
        justify = {"center": "justify-center", "right": "justify-end"}.get(block.align, "")
        out.append(f'    <ul class="{_classes("flex flex-wrap", justify, "space-x-6")}">')
        out += [f'      <li><a href="#" class="hover:underline">{_text(link)}</a></li>' for link in block.links]
        out.append("    </ul>")
    out.append(f"  </{tag}>")
    return out


def shade_of(colour: str | None) -> int | None:
    """900 for "green-900", 1000 for black, 0 for white; None for no colour or an unknown name."""
    if colour == "black":
        return 1000
    if colour == "white":
        return 0
    family, _, shade = (colour or "").rpartition("-")
    return int(shade) if family and shade.isdigit() else None


def readable_on(bg: str | None) -> str:
    """A text colour that reads well on `bg`: white on dark colours, near-black on light ones."""
    shade = shade_of(bg)
    return "white" if shade is not None and shade >= 500 else "gray-900"
