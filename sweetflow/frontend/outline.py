"""Reading any HTML page into the page model (`sweetflow.frontend.page.Page`).

Standard library only (`html.parser`), and forgiving: missing, empty, truncated or malformed HTML
gives a page with fewer blocks, never an error. Pages written by `page.to_html` read back exactly;
others (the official ColBench targets, an agent's page) are read the way a person skims a page:

- Blocks are the element children of <body>. A wrapper (<div>/<main>) holding two or more
  sectioning elements (<header>, <nav>, <section>, ...) is looked through, so `<main>` around the
  page's sections does not hide them. Blocks with nothing visible are skipped.
- A block's kind is its tag for <header>, <nav> and <footer>; otherwise it is read from what it
  shows: items in columns -> "cards" if they have a background else "columns"; a picture ->
  "hero"; a button -> "cta"; else "text".
- Colours are the block element's own `bg-*`/`text-*` classes; a block without a text colour of
  its own takes the most common one of its elements (a navigation bar colours its links).
  Prefixed variants (`hover:`, `md:`) are ignored: the screenshot shows the plain state.
- Items are the children of the first grid (`grid-cols-N`) or row of flex columns whose children
  all carry a title or a paragraph; their texts belong to the items, not to the block.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

from sweetflow.frontend.page import FONTS, Block, Button, Image, Item, Page

VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
INVISIBLE = frozenset("head script style link meta title template noscript".split())
SECTIONING = frozenset("header nav section footer main article aside".split())
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
# Elements whose text does not run on into the next one's ("<p>a</p><p>b</p>" reads "a b").
BREAKS = frozenset("p div li br h1 h2 h3 h4 h5 h6 section header footer nav ul ol td th tr".split())
COLOUR = re.compile(r"(?:[a-z]+-\d{2,3}|white|black)")
NOT_COLOUR_FAMILIES = frozenset({"opacity"})  # bg-opacity-50 is no colour
SIZE = re.compile(r"text-(xs|sm|base|lg|[2-9]?xl)")
PADDING = re.compile(r"(?:py|p|pt)-(\d+)")
PICSUM_SIZE = re.compile(r"picsum\.photos/(?:id/\d+/|seed/[^/]+/)?(\d+)(?:/(\d+))?")
BACKGROUND_URL = re.compile(r"background(?:-image)?\s*:[^;]*url\(\s*['\"]?([^'\")]*)", re.I)
GRID_COLUMNS = re.compile(r"(?:([a-z0-9]+):)?grid-cols-(\d+)")


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        """Unprefixed utility classes (what the page shows at rest, on a wide screen's base)."""
        return [c for c in self.attrs.get("class", "").split() if ":" not in c]

    @property
    def all_classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def elements(self) -> list[Node]:
        return [c for c in self.children if isinstance(c, Node)]

    def walk(self, skip: Node | None = None):
        """This node and its descendants in document order, leaving out the subtree `skip`."""
        if self is skip:
            return
        yield self
        for child in self.elements():
            yield from child.walk(skip)

    def text(self, leave_out=lambda node: False) -> str:
        """The visible text, whitespace collapsed, without the elements `leave_out` picks."""
        parts: list[str] = []
        self._collect(parts, leave_out)
        return " ".join("".join(parts).split())

    def _collect(self, parts: list[str], leave_out) -> None:
        for child in self.children:
            if isinstance(child, str):
                parts.append(child)
            elif child.tag not in INVISIBLE and not leave_out(child):
                parts.append(" " if child.tag in BREAKS else "")
                child._collect(parts, leave_out)
                parts.append(" " if child.tag in BREAKS else "")


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        # Close up to the matching open element; a stray end tag closes nothing.
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse_html(html: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(html or "")
    builder.close()
    return builder.root


def read_page(html: str | None) -> Page:
    root = parse_html(html or "")
    body = next((n for n in root.walk() if n.tag == "body"), None)
    container = body or next((n for n in root.walk() if n.tag == "html"), root)
    blocks = tuple(b for node in _block_nodes(container) if (b := _read_block(node)) is not None)
    fonts = [c.removeprefix("font-") for c in (body.classes if body else []) if c.startswith("font-")]
    font = next((f for f in fonts if f in FONTS), "sans")
    return Page(blocks=blocks, bg=_colour(body, "bg") if body else None, font=font)


def _block_nodes(container: Node) -> list[Node]:
    nodes = []
    for child in container.elements():
        if child.tag in INVISIBLE or "hidden" in child.classes:
            continue
        sections = sum(c.tag in SECTIONING for c in child.elements())
        if child.tag in ("div", "main") and sections >= 2:
            nodes += _block_nodes(child)
        else:
            nodes.append(child)
    return nodes


def _colour(node: Node, prefix: str) -> str | None:
    for name in node.classes:
        if name.startswith(prefix + "-"):
            value = name[len(prefix) + 1 :]
            if COLOUR.fullmatch(value) and value.rpartition("-")[0] not in NOT_COLOUR_FAMILIES:
                return value
    return None


def _is_button(node: Node) -> bool:
    return node.tag == "button" or (node.tag == "a" and _colour(node, "bg") is not None)


def _image_of(node: Node) -> Image | None:
    url = node.attrs.get("src", "") if node.tag == "img" else ""
    if not url:
        match = BACKGROUND_URL.search(node.attrs.get("style", ""))
        if not match:
            return None
        url = match.group(1)
    size = PICSUM_SIZE.search(url)
    if not size:
        return Image(0, 0)
    width = int(size.group(1))
    return Image(width, int(size.group(2) or width))  # picsum's /W alone is a square


def _items_container(block: Node) -> tuple[Node, int] | None:
    """The first element laying out items side by side, and its number of columns."""
    for node in block.walk():
        grid = [m for c in node.all_classes if (m := GRID_COLUMNS.fullmatch(c))]
        if grid:
            plain = [int(m.group(2)) for m in grid if m.group(1) is None]
            columns = plain[0] if plain else max(int(m.group(2)) for m in grid)
            if node.elements():
                return node, columns
        children = node.elements()
        if _is_row(node) and len(children) >= 2 and all(_has_words(c) for c in children):
            return node, len(children)
    return None


def _is_row(node: Node) -> bool:
    classes = node.all_classes
    flex = any(c == "flex" or c.endswith(":flex") for c in classes)
    stacked = "flex-col" in classes and not any(c.endswith(":flex-row") for c in classes)
    return flex and not stacked


def _has_words(node: Node) -> bool:
    return any(n.tag in HEADINGS or n.tag == "p" for n in node.walk())


def _is_link_entry(node: Node) -> bool:
    return node.tag == "li" and any(d.tag == "a" for d in node.walk())


def _not_prose(node: Node) -> bool:
    """Elements whose text is a title, a link or a button label rather than running text."""
    return node.tag in HEADINGS or node.tag == "a" or _is_button(node)


def _paragraphs(node: Node, skip: Node | None) -> list[str]:
    """Running texts: each <p>, list item without a link, or other element with text of its own,
    outside `skip`; titles, links and button labels are read separately and left out."""
    texts: list[str] = []

    def visit(n: Node) -> None:
        if n is skip or n.tag in INVISIBLE or _not_prose(n) or _is_link_entry(n):
            return
        own_text = any(isinstance(c, str) and c.strip() for c in n.children)
        if n.tag in ("p", "li") or own_text:
            if text := n.text(_not_prose):
                texts.append(text)
            return
        for child in n.elements():
            visit(child)

    visit(node)
    return texts


def _read_block(node: Node) -> Block | None:
    found = _items_container(node)
    container, columns = found if found else (None, 0)
    items = tuple(_read_item(c) for c in container.elements() if c.tag not in INVISIBLE) if container else ()
    outside = list(node.walk(container))
    in_buttons = {id(d) for n in outside if _is_button(n) for d in n.walk()}
    heading = next((n for n in outside if n.tag in HEADINGS and n.text()), None)
    images = [image for n in outside if (image := _image_of(n))]
    item_bgs = Counter(c for child in container.elements() if (c := _colour(child, "bg"))) if container else Counter()
    fields = dict(
        bg=_colour(node, "bg"),
        text=_colour(node, "text") or _most_common_text_colour(outside, in_buttons),
        align=_alignment(outside, in_buttons),
        padding=next((int(m.group(1)) for c in node.classes if (m := PADDING.fullmatch(c))), 0),
        heading=heading.text() if heading else "",
        heading_size=next((m.group(1) for c in heading.classes if (m := SIZE.fullmatch(c))), "") if heading else "",
        paragraphs=tuple(_paragraphs(node, container)),
        links=tuple(t for n in outside if n.tag == "a" and id(n) not in in_buttons and (t := n.text())),
        buttons=tuple(Button(n.text(), _colour(n, "bg")) for n in outside if _is_button(n) and n.text()),
        image=images[0] if images else None,
        columns=columns if items else 0,
        items=items,
        item_bg=item_bgs.most_common(1)[0][0] if item_bgs else None,
        item_images=container is not None and any(n.tag == "img" for n in container.walk()),
    )
    shows = ("bg", "heading", "paragraphs", "links", "buttons", "image", "items")
    if not any(fields[name] for name in shows):
        return None
    return Block(kind=_kind(node.tag, fields), **fields)


def _kind(tag: str, fields: dict) -> str:
    if tag in ("header", "nav", "footer"):
        return tag
    if fields["items"]:
        return "cards" if fields["item_bg"] else "columns"
    if fields["image"]:
        return "hero"
    return "cta" if fields["buttons"] else "text"


def _read_item(node: Node) -> Item:
    heading = next((n.text() for n in node.walk() if n.tag in HEADINGS and n.text()), "")
    return Item(heading=heading, text=" ".join(_paragraphs(node, None)))


def _most_common_text_colour(nodes: list[Node], in_buttons: set[int]) -> str | None:
    counts = Counter(c for n in nodes if id(n) not in in_buttons and (c := _colour(n, "text")))
    return counts.most_common(1)[0][0] if counts else None


def _alignment(nodes: list[Node], in_buttons: set[int]) -> str:
    """The block element's own alignment, else the first one set inside it (a centred title, a
    centred row of links)."""
    for n in nodes:
        if id(n) in in_buttons:
            continue
        for c in n.classes:
            if c in ("text-center", "justify-center"):
                return "center"
            if c in ("text-right", "justify-end"):
                return "right"
            if c == "text-left":
                return "left"
    return "left"
