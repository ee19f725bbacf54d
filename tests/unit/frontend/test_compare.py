"""compare.py: concrete differences, most outstanding first, on built, generated and real pages."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.frontend.compare import EXTRA, LABELS, MISSING, MOVED, apply, compare, diff_pages
from sweetflow.frontend.outline import read_page
from sweetflow.frontend.page import ALIGNMENTS, Block, Button, Image, Page, to_html
from sweetflow.frontend.pages import generate_page
from tests.support.project import SAMPLE

FRONTEND_SAMPLE = SAMPLE / "frontend_test_first30.jsonl"

HEADER = Block("header", "green-500", "white", padding=4, heading="Healthcare Provider", heading_size="3xl")
NAV = Block("nav", "white", "green-700", padding=4, links=("Home", "Services", "Contact"))
TEXT = Block(
    "text",
    None,
    "gray-800",
    padding=8,
    heading="Our Services",
    heading_size="2xl",
    paragraphs=("We offer primary care and vaccinations.",),
)
FOOTER = Block("footer", "gray-800", "white", padding=4, paragraphs=("© 2024 Clinic",))
TARGET = Page((HEADER, NAV, TEXT, FOOTER), bg="gray-100")


def sentences(agent: Page, target: Page = TARGET) -> list[str]:
    return [d.sentence for d in compare(to_html(agent), to_html(target))]


def test_a_changed_colour_is_named_with_its_class():
    agent = replace(TARGET, blocks=(replace(HEADER, bg="gray-500"), NAV, TEXT, FOOTER))
    assert sentences(agent) == ["The header's background should be green (bg-green-500), not gray."]


def test_a_missing_section_is_placed_between_its_neighbours():
    agent = replace(TARGET, blocks=(HEADER, TEXT, FOOTER))
    assert sentences(agent) == ["There should be a navigation bar between the header and the text section."]


def test_changed_texts_are_quoted():
    agent = replace(
        TARGET, blocks=(HEADER, replace(NAV, links=("Home", "About")), replace(TEXT, heading="Our Work"), FOOTER)
    )
    assert sentences(agent) == [
        "The navigation bar's links should be 'Home', 'Services', 'Contact' (now 'Home', 'About').",
        "The text section's title should read 'Our Services', not 'Our Work'.",
    ]


def test_missing_section_before_wrong_colour_before_wrong_word():
    agent = replace(TARGET, blocks=(replace(HEADER, heading="Clinic"), replace(TEXT, text="red-500"), FOOTER))
    found = sentences(agent)
    assert found[0].startswith("There should be a navigation bar")
    assert found[1] == "The text in the text section should be dark gray (text-gray-800), not red."
    assert found[2] == "The header's title should read 'Healthcare Provider', not 'Clinic'."


def test_misplaced_and_extra_sections():
    cta = Block("cta", "blue-600", "white", heading="Call us", buttons=(Button("Call", "white"),))
    moved = sentences(replace(TARGET, blocks=(HEADER, TEXT, NAV, FOOTER)))
    assert len(moved) == 1 and "should be between the header and the text section" in moved[0]
    extra = compare(to_html(replace(TARGET, blocks=(HEADER, NAV, TEXT, cta, FOOTER))), to_html(TARGET))
    assert [d.rank for d in extra] == [EXTRA] and "remove the call-to-action section" in extra[0].sentence


@pytest.mark.parametrize(
    "agent", [None, "", "   ", "<html>", "<html><body><div class='bg-", "<p>only a line</p>", "<<<>>>"]
)
def test_missing_empty_or_malformed_agent_page(agent):
    found = compare(agent, to_html(TARGET))
    assert found and found[0].rank == MISSING
    assert any("There should be a header" in d.sentence for d in found)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_a_page_has_no_difference_from_itself(seed):
    html = to_html(generate_page(random.Random(seed)).page)
    assert compare(html, html) == []


def _other(colour: str | None) -> str:
    return "pink-300" if colour != "pink-300" else "gray-300"


def _mutations(block: Block) -> list[tuple[str, Block]]:
    """(the field a person would name, the block with only that changed)."""
    out = [
        ("bg", replace(block, bg=_other(block.bg))),
        ("text", replace(block, text=_other(block.text))),
        ("align", replace(block, align=next(a for a in ALIGNMENTS if a != block.align))),
        ("padding", replace(block, padding=block.padding + 2)),
    ]
    if block.heading:
        out += [
            ("heading", replace(block, heading=block.heading + " Today")),
            ("heading_size", replace(block, heading_size="6xl")),
        ]
    if block.paragraphs:
        out.append(("paragraphs", replace(block, paragraphs=("Something else entirely.",))))
    if block.links:
        out.append(("links", replace(block, links=(*block.links, "Extra"))))
    if block.buttons:
        first = block.buttons[0]
        out += [
            ("button_labels", replace(block, buttons=(replace(first, label="Other"), *block.buttons[1:]))),
            ("button_colours", replace(block, buttons=(replace(first, bg=_other(first.bg)), *block.buttons[1:]))),
        ]
    if block.items:
        out.append(("item", replace(block, items=(replace(block.items[0], heading="Other"), *block.items[1:]))))
    if block.item_bg:
        out.append(("item_bg", replace(block, item_bg=_other(block.item_bg))))
    if block.image:
        out.append(("image", replace(block, image=Image(block.image.width + 10, block.image.height))))
    return out


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.data())
def test_a_one_field_change_is_named_alone_and_undone_by_its_edit(seed, data):
    target = generate_page(random.Random(seed)).page
    at = data.draw(st.integers(min_value=0, max_value=len(target.blocks) - 1), label="block")
    field, changed = data.draw(st.sampled_from(_mutations(target.blocks[at])), label="mutation")
    agent = replace(target, blocks=target.blocks[:at] + (changed,) + target.blocks[at + 1 :])
    (difference,) = compare(to_html(agent), to_html(target))
    assert [e.field for e in difference.edits] == [field] and all(e.at == at for e in difference.edits)
    assert apply(read_page(to_html(agent)), [difference]) == target


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.sampled_from(["bg", "font"]))
def test_page_wide_changes_are_named(seed, field):
    target = generate_page(random.Random(seed)).page
    agent = (
        replace(target, bg=_other(target.bg))
        if field == "bg"
        else replace(target, font="mono" if target.font != "mono" else "serif")
    )
    (difference,) = diff_pages(agent, target)
    assert difference.edits[0].field == field and apply(agent, [difference]) == target


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=0, max_value=2**32))
def test_applying_every_difference_repeatedly_reaches_the_target(seed_a, seed_b):
    agent, target = generate_page(random.Random(seed_a)).page, generate_page(random.Random(seed_b)).page
    for _ in range(3):  # sections added in one round are filled in by the next ones
        agent = read_page(to_html(apply(agent, diff_pages(agent, target))))
    assert diff_pages(agent, target) == [] and to_html(agent) == to_html(target)


@pytest.fixture(scope="module")
def real_pages() -> list[str]:
    return [json.loads(line)["ground_truth"] for line in FRONTEND_SAMPLE.read_text(encoding="utf-8").splitlines()]


def test_real_pages_have_no_difference_from_themselves(real_pages):
    assert all(compare(page, page) == [] for page in real_pages)


def test_mutated_real_page_differences(real_pages):
    page = real_pages[0]  # healthcare: green header, nav, two columns, footer
    recoloured = page.replace('<header class="bg-green-500', '<header class="bg-red-500', 1)
    assert [d.sentence for d in compare(recoloured, page)] == [
        "The header's background should be green (bg-green-500), not red."
    ]
    retitled = page.replace(">Patient Information</h2>", ">Patient Records</h2>", 1)
    (difference,) = compare(retitled, page)
    assert "'Patient Information'" in difference.sentence and difference.rank > LABELS
    no_footer = page[: page.index("<footer")] + page[page.index("</footer>") + len("</footer>") :]
    assert (
        compare(no_footer, page)[0].sentence
        == "There should be a footer at the bottom of the page, below the columns section."
    )
    swapped = compare(page.replace("<nav", "<aside").replace("</nav>", "</aside>"), page)
    assert swapped[0].rank in (MISSING, MOVED)


def test_every_real_page_differs_from_an_empty_one_starting_with_its_sections(real_pages):
    for page in real_pages:
        found = compare("<html><body></body></html>", page)
        assert found and found[0].rank == MISSING
