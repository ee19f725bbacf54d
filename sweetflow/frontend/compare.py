"""How an agent's page differs from the target, as a person looking at both would say it.

`compare(agent_html, target_html)` reads both pages (`sweetflow.frontend.outline`), pairs their
blocks in order by kind (difflib's matching of the two kind sequences; a block of the right kind in
the wrong place is "moved", not missing and extra), and lists every difference, most outstanding
first:

  0 a missing section, 1 an extra one, 2 one in the wrong place,
  3 layout (columns, number of items, pictures), 4 backgrounds, 5 text and button colours,
  6 alignment, 7 titles, links and button labels, 8 running text, 9 sizes, spacing and font;

ties go top of the page first. Each difference is one concrete sentence ("The header's background
should be dark green (bg-green-700), not gray.") and the edit that does exactly what the sentence
says, which is how the scripted design agent acts on what it is told (`apply`). Long texts are
quoted up to `QUOTE_CHARS` and compared on that much, as a person skimming a paragraph would.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from functools import lru_cache

from sweetflow.frontend.outline import read_page
from sweetflow.frontend.page import Block, Button, Item, Page, shade_of
from sweetflow.frontend.plain import PLAIN_BUTTON_BG, plain_block, plain_item

QUOTE_CHARS = 120
KIND_NAMES = {
    "header": "the header",
    "nav": "the navigation bar",
    "hero": "the banner",
    "columns": "the columns section",
    "cards": "the cards section",
    "text": "the text section",
    "cta": "the call-to-action section",
    "footer": "the footer",
}
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
ALIGN_WORDS = {"left": "left-aligned", "center": "centered (text-center)", "right": "right-aligned (text-right)"}
FONT_WORDS = {"sans": "sans-serif", "serif": "serif", "mono": "monospace"}

MISSING, EXTRA, MOVED, LAYOUT, BACKGROUND, COLOUR, ALIGNMENT, LABELS, TEXT, SIZES = range(10)


@dataclass(frozen=True)
class Edit:
    """One change to the agent's page. `at` and `after` are indices of the agent's blocks as
    compared (-1 for `after`: at the top); `order` is the target position, which orders several
    blocks placed after the same one."""

    op: str  # "page" (a page field), "set" (a block field), "insert", "remove" or "move"
    field: str = ""
    value: object = None
    at: int = -1
    after: int = -1
    order: int = 0


@dataclass(frozen=True)
class Difference:
    rank: int  # the category above: lower is more outstanding
    position: int  # the target block it concerns; -1: the page as a whole, len(target): a block to remove
    sentence: str
    edits: tuple[Edit, ...]


def compare(agent_html: str | None, target_html: str) -> list[Difference]:
    """Every difference of the agent's page from the target, most outstanding first. A missing,
    empty or malformed agent page reads as a page with fewer (or no) blocks."""
    return diff_pages(read_page(agent_html), read_target(target_html))


@lru_cache(maxsize=1024)
def read_target(html: str) -> Page:
    """A target page, read once for all the turns that compare with it (pages are immutable)."""
    return read_page(html)


def diff_pages(agent: Page, target: Page) -> list[Difference]:
    found: list[Difference] = []
    if agent.bg != target.bg:
        found.append(
            _page_edit(
                BACKGROUND,
                f"The page background should be {_colour(target.bg, 'bg')}, not {_colour(agent.bg)}.",
                "bg",
                target.bg,
            )
        )
    if agent.font != target.font:
        found.append(
            _page_edit(
                SIZES,
                f"The page should use a {FONT_WORDS.get(target.font, target.font)} font "
                f"(font-{target.font}), not {FONT_WORDS.get(agent.font, agent.font)}.",
                "font",
                target.font,
            )
        )
    names = _names(target.blocks)
    pairs, missing, extra, moved = _align(agent.blocks, target.blocks)
    anchors = _anchors(pairs, len(target.blocks))
    for j in missing:
        kind = target.blocks[j].kind
        sentence = f"There should be {_a(kind)} {_where(j, names)}."
        insert = Edit("insert", value=plain_block(kind), after=anchors[j], order=j)
        found.append(Difference(MISSING, j, sentence, (insert,)))
    agent_names = _names(agent.blocks)
    for i in extra:
        block = agent.blocks[i]
        several = sum(b.kind == block.kind for b in agent.blocks) > 1
        which = f" (the one titled {_quote(block.heading)})" if block.heading and several else ""
        sentence = f"Please remove {agent_names[i]}{which}; the page I want doesn't have it."
        found.append(Difference(EXTRA, len(target.blocks), sentence, (Edit("remove", at=i),)))
    for i, j in moved:
        sentence = f"{_cap(names[j])} should be {_where(j, names)}."
        found.append(Difference(MOVED, j, sentence, (Edit("move", at=i, after=anchors[j], order=j),)))
    for i, j in sorted(pairs + moved, key=lambda p: p[1]):
        found += _block_differences(agent.blocks[i], target.blocks[j], i, j, names[j])
    return sorted(found, key=lambda d: (d.rank, d.position))


def apply(page: Page, differences: Iterable[Difference]) -> Page:
    """The page with the edits of `differences` made; they must come from comparing this page."""
    blocks = list(page.blocks)
    fields: dict[str, object] = {}
    removed: set[int] = set()
    placed: list[tuple[int, int, Block | int]] = []  # (after, order, new block or index of a moved one)
    for edit in (e for d in differences for e in d.edits):
        if edit.op == "page":
            fields[edit.field] = edit.value
        elif edit.op == "set":
            blocks[edit.at] = _set(blocks[edit.at], edit.field, edit.value)
        elif edit.op == "remove":
            removed.add(edit.at)
        elif edit.op == "insert":
            placed.append((edit.after, edit.order, edit.value))
        elif edit.op == "move":
            removed.add(edit.at)
            placed.append((edit.after, edit.order, edit.at))
    keyed = [((i, 0, 0), block) for i, block in enumerate(blocks) if i not in removed]
    keyed += [((after, 1, order), blocks[b] if isinstance(b, int) else b) for after, order, b in placed]
    return replace(page, **fields, blocks=tuple(block for _, block in sorted(keyed, key=lambda kb: kb[0])))


# --- pairing blocks ------------------------------------------------------------------------------


def _align(agent: tuple[Block, ...], target: tuple[Block, ...]):
    """(pairs kept in order, missing target indices, extra agent indices, moved (agent, target) pairs)."""
    matcher = SequenceMatcher(None, [b.kind for b in agent], [b.kind for b in target], autojunk=False)
    pairs = [(m.a + k, m.b + k) for m in matcher.get_matching_blocks() for k in range(m.size)]
    paired_agent = {i for i, _ in pairs}
    paired_target = {j for _, j in pairs}
    spare = [i for i in range(len(agent)) if i not in paired_agent]
    moved, missing = [], []
    for j in (j for j in range(len(target)) if j not in paired_target):
        i = next((i for i in spare if agent[i].kind == target[j].kind), None)
        if i is None:
            missing.append(j)
        else:
            spare.remove(i)
            moved.append((i, j))
    return pairs, missing, spare, moved


def _anchors(pairs: list[tuple[int, int]], n_target: int) -> list[int]:
    """For each target position, the agent block (kept in order) that it should follow; -1: the top."""
    by_target = {j: i for i, j in pairs}
    anchors, last = [], -1
    for j in range(n_target):
        anchors.append(last)
        last = by_target.get(j, last)
    return anchors


def _names(blocks: tuple[Block, ...]) -> list[str]:
    totals = {kind: sum(b.kind == kind for b in blocks) for kind in {b.kind for b in blocks}}
    seen: dict[str, int] = {}
    names = []
    for block in blocks:
        seen[block.kind] = seen.get(block.kind, 0) + 1
        name = KIND_NAMES.get(block.kind, "the section")
        if totals[block.kind] > 1:
            name = f"the {_ordinal(seen[block.kind])} {name[4:]}"
        names.append(name)
    return names


def _where(j: int, names: list[str]) -> str:
    if len(names) == 1:
        return "on the page"
    if j == 0:
        return f"at the top of the page, above {names[1]}"
    if j == len(names) - 1:
        return f"at the bottom of the page, below {names[j - 1]}"
    return f"between {names[j - 1]} and {names[j + 1]}"


# --- differences within a pair of blocks ---------------------------------------------------------


def _block_differences(a: Block, t: Block, i: int, j: int, name: str) -> list[Difference]:
    """Differences of the agent's block `a` (index i) from the target's `t` (index j), named `name`."""
    found = []
    for group in (_layout, _colours, _alignment, _labels, _texts, _sizes):
        for rank, sentence, *edits in group(a, t, name):
            found.append(Difference(rank, j, sentence, tuple(Edit("set", f, v, at=i) for f, v in edits)))
    return found


# Each group yields (rank, sentence, (field, value), ...): what to say and the fields it sets.


def _layout(a: Block, t: Block, name: str):
    noun = {"cards": "cards", "columns": "columns"}.get(t.kind, "boxes")
    if t.kind == "columns" and len(t.items) == t.columns and (a.columns, len(a.items)) != (t.columns, len(t.items)):
        yield (
            LAYOUT,
            f"{_cap(name)} should have {t.columns} columns, not {len(a.items)}.",
            ("columns", t.columns),
            ("item_count", len(t.items)),
        )
    else:
        if len(a.items) != len(t.items):
            yield (
                LAYOUT,
                f"{_cap(name)} should have {len(t.items)} {noun}, not {len(a.items)}.",
                ("item_count", len(t.items)),
            )
        if t.items and a.columns != t.columns:
            yield (
                LAYOUT,
                f"{_cap(name)} should lay out its {noun} in {t.columns} columns, not {a.columns}.",
                ("columns", t.columns),
            )
    if t.image and not a.image:
        picture = "a logo" if t.kind == "header" else "a large picture"
        size = f" ({t.image.width}×{t.image.height})" if t.image.width else ""
        yield LAYOUT, f"{_cap(name)} should have {picture}{size}.", ("image", t.image)
    elif a.image and not t.image:
        yield LAYOUT, f"{_cap(name)} shouldn't have a picture.", ("image", None)
    if t.items and a.item_images != t.item_images:
        should = "each have a picture" if t.item_images else "have no pictures"
        yield LAYOUT, f"The {noun} in {name} should {should}.", ("item_images", t.item_images)


def _colours(a: Block, t: Block, name: str):
    if a.bg != t.bg and a.text != t.text:  # one look at a block takes in both its colours
        yield (
            BACKGROUND,
            f"{_cap(name)} should be {_colour(t.bg, 'bg')} with {_colour(t.text, 'text')} text, "
            f"not {_colour(a.bg)} with {_colour(a.text)} text.",
            ("bg", t.bg),
            ("text", t.text),
        )
    elif a.bg != t.bg:
        yield (
            BACKGROUND,
            f"{_possessive(name)} background should be {_colour(t.bg, 'bg')}, not {_colour(a.bg)}.",
            ("bg", t.bg),
        )
    elif a.text != t.text:
        yield (
            COLOUR,
            f"The text in {name} should be {_colour(t.text, 'text')}, not {_colour(a.text)}.",
            ("text", t.text),
        )
    if t.items and a.item_bg != t.item_bg:
        noun = {"cards": "cards", "columns": "columns"}.get(t.kind, "boxes")
        yield (
            BACKGROUND,
            f"The {noun} in {name} should have {_colour(t.item_bg, 'bg')} backgrounds, not {_colour(a.item_bg)}.",
            ("item_bg", t.item_bg),
        )
    wanted = tuple(b.bg for b in t.buttons)
    if len(a.buttons) == len(t.buttons) and tuple(b.bg for b in a.buttons) != wanted:
        which = "button" if len(t.buttons) == 1 else "buttons"
        said = " and ".join(_colour(c, "bg") for c in wanted)
        was = " and ".join(_colour(b.bg) for b in a.buttons)
        yield COLOUR, f"{_possessive(name)} {which} should be {said}, not {was}.", ("button_colours", wanted)


def _alignment(a: Block, t: Block, name: str):
    if a.align != t.align:
        was = ALIGN_WORDS[a.align].split(" (")[0]
        yield ALIGNMENT, f"{_possessive(name)} content should be {ALIGN_WORDS[t.align]}, not {was}.", ("align", t.align)


def _labels(a: Block, t: Block, name: str):
    Name, own = _cap(name), _possessive(name)
    if not _same(a.heading, t.heading):
        if not t.heading:
            yield LABELS, f"{Name} shouldn't have a title.", ("heading", "")
        elif not a.heading:
            yield LABELS, f"{Name} should have the title {_quote(t.heading)}.", ("heading", _said(t.heading))
        else:
            yield (
                LABELS,
                f"{own} title should read {_quote(t.heading)}, not {_quote(a.heading)}.",
                ("heading", _said(t.heading)),
            )
    if not _same_all(a.links, t.links):
        if not t.links:
            yield LABELS, f"{Name} shouldn't have any links.", ("links", ())
        else:
            now = f" (now {_quotes(a.links)})" if a.links else ""
            yield LABELS, f"{own} links should be {_quotes(t.links)}{now}.", ("links", tuple(map(_said, t.links)))
    labels = tuple(b.label for b in t.buttons)
    if not _same_all(tuple(b.label for b in a.buttons), labels):
        said = ("button_labels", tuple(map(_said, labels)))
        if not labels:
            yield LABELS, f"{Name} shouldn't have any buttons.", said
        elif len(a.buttons) == len(labels):
            which = "button" if len(labels) == 1 else "buttons"
            yield (
                LABELS,
                f"{own} {which} should say {_quotes(labels)}, not {_quotes(b.label for b in a.buttons)}.",
                said,
            )
        else:
            which = "a button" if len(labels) == 1 else f"{len(labels)} buttons"
            yield LABELS, f"{Name} should have {which} saying {_quotes(labels)}.", said


def _texts(a: Block, t: Block, name: str):
    if not _same_all(a.paragraphs, t.paragraphs):
        if not t.paragraphs:
            yield TEXT, f"{_cap(name)} shouldn't have any text besides its title.", ("paragraphs", ())
        else:
            yield (
                TEXT,
                f"The text in {name} should read {_quotes(t.paragraphs, ' / ')}.",
                ("paragraphs", tuple(map(_said, t.paragraphs))),
            )
    singular = {"cards": "card", "columns": "column"}.get(t.kind, "box")
    for k, (mine, theirs) in enumerate(zip(a.items, t.items)):
        if not (_same(mine.heading, theirs.heading) and _same(mine.text, theirs.text)):
            title = f"titled {_quote(theirs.heading)}" if theirs.heading else "without a title"
            says = f"saying {_quote(theirs.text)}" if theirs.text else "with no text"
            yield (
                TEXT,
                f"The {_ordinal(k + 1)} {singular} in {name} should be {title}, {says}.",
                ("item", (k, Item(_said(theirs.heading), _said(theirs.text)))),
            )


def _sizes(a: Block, t: Block, name: str):
    if t.heading and a.heading_size != t.heading_size:
        was = f"text-{a.heading_size}" if a.heading_size else "the default size"
        yield (
            SIZES,
            f"{_possessive(name)} title should be {_size_word(a.heading_size, t.heading_size)} "
            f"(text-{t.heading_size or 'base'}), not {was}.",
            ("heading_size", t.heading_size),
        )
    if a.padding != t.padding:
        more = "more" if t.padding > a.padding else "less"
        yield (
            SIZES,
            f"{_cap(name)} should have {more} space above and below (py-{t.padding}), not py-{a.padding}.",
            ("padding", t.padding),
        )
    if a.image and t.image and t.image.width and a.image != t.image:
        yield (
            SIZES,
            f"The picture in {name} should be {t.image.width}×{t.image.height}, not {a.image.width}×{a.image.height}.",
            ("image", t.image),
        )


def _set(block: Block, field: str, value) -> Block:
    if field == "item_count":
        items = block.items[:value] + tuple(plain_item(n + 1) for n in range(len(block.items), value))
        return replace(block, items=items, columns=(block.columns or min(value, 3)) if value else 0)
    if field == "item":
        k, item = value
        return replace(block, items=block.items[:k] + (item,) + block.items[k + 1 :])
    if field == "button_labels":
        colours = [b.bg for b in block.buttons]
        return replace(
            block,
            buttons=tuple(
                Button(label, colours[k] if k < len(colours) else PLAIN_BUTTON_BG) for k, label in enumerate(value)
            ),
        )
    if field == "button_colours":
        return replace(block, buttons=tuple(Button(b.label, c) for b, c in zip(block.buttons, value)))
    return replace(block, **{field: value})


def _page_edit(rank: int, sentence: str, field: str, value) -> Difference:
    return Difference(rank, -1, sentence, (Edit("page", field, value),))


# --- words ---------------------------------------------------------------------------------------


def _colour(colour: str | None, utility: str = "") -> str:
    """ "dark green (bg-green-700)" for the target's colour (with its class when `utility` is
    given), "dark green" for the agent's; "plain" when none is set."""
    if colour is None:
        return f"plain (no {utility} colour class)" if utility else "plain"
    family, _, _ = colour.rpartition("-")
    shade = shade_of(colour)
    if not family or shade is None:
        words = colour
    else:
        tone = {
            50: "very light ",
            100: "very light ",
            200: "light ",
            300: "light ",
            700: "dark ",
            800: "dark ",
            900: "very dark ",
        }.get(shade, "")
        words = f"{tone}{family}"
    return f"{words} ({utility}-{colour})" if utility else words


def _size_word(was: str, want: str) -> str:
    order = ["xs", "sm", "base", "lg", "xl", "2xl", "3xl", "4xl", "5xl", "6xl", "7xl", "8xl", "9xl"]
    rank = {size: n for n, size in enumerate(order)}
    return "bigger" if rank.get(want or "base", 2) > rank.get(was or "base", 2) else "smaller"


def _said(text: str) -> str:
    """What a person quotes of a text: all of it if short, its beginning if long."""
    return text[:QUOTE_CHARS].rstrip()


def _quote(text: str) -> str:
    return f"'{_said(text)}{'…' if len(text) > QUOTE_CHARS else ''}'"


def _quotes(texts: Iterable[str], separator: str = ", ") -> str:
    return separator.join(map(_quote, texts))


def _same(a: str, b: str) -> bool:
    return _said(a) == _said(b)


def _same_all(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) == len(b) and all(map(_same, a, b))


def _a(kind: str) -> str:
    name = KIND_NAMES.get(kind, "the section")[4:]
    return ("an " if name[0] in "aeiou" else "a ") + name


def _ordinal(n: int) -> str:
    return ORDINALS[n - 1] if n <= len(ORDINALS) else f"{n}th"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _possessive(name: str) -> str:
    return _cap(name) + "'s"
