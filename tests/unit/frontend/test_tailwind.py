"""The Tailwind rules a page can use: hand-built stylesheets, and Tailwind's own file."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.frontend.tailwind import TailwindSubset, page_tokens
from tests.support.browser import TAILWIND

CSS = (
    "/*! header */*,::after{box-sizing:border-box}html{line-height:1.5}"
    ".x{a:1}.y,.z{b:2}.group:hover .group-hover\\:x{c:3}.\\32xl\\:x{d:4}.w-1\\/2{e:5}"
    '.q[data-note="}{"]{f:6}'
    "@media (min-width:640px){.sm\\:x{g:7}.y{h:8}@media (min-width:1px){.sm\\:container{i:9}}}"
    "@keyframes spin{to{transform:rotate(360deg)}}"
)


def test_a_page_keeps_the_base_rules_its_classes_and_every_keyframes():
    page = '<div class="x group group-hover:x w-1/2"><p class="sm:x">hi</p></div>'
    assert TailwindSubset(CSS).for_page(page) == (
        "*,::after{box-sizing:border-box}html{line-height:1.5}"
        ".x{a:1}.group:hover .group-hover\\:x{c:3}.w-1\\/2{e:5}"
        "@media (min-width:640px){.sm\\:x{g:7}}"
        "@keyframes spin{to{transform:rotate(360deg)}}"
    )


def test_one_selector_of_a_list_keeps_the_rule_and_escapes_and_strings_are_read():
    subset = TailwindSubset(CSS)
    assert ".y,.z{b:2}" in subset.for_page('<b class="z">')
    assert ".\\32xl\\:x{d:4}" in subset.for_page('<b class="2xl:x">')
    assert '.q[data-note="}{"]{f:6}' in subset.for_page('<b class="q">')
    # A class needs its whole selector: group-hover:x without group is not kept.
    assert "group-hover" not in subset.for_page('<b class="group-hover:x">')
    # A block nested in @media comes whole with any class it names; its @media with it.
    assert subset.for_page('<b class="sm:container y">').endswith(
        "@media (min-width:640px){.y{h:8}@media (min-width:1px){.sm\\:container{i:9}}}"
        "@keyframes spin{to{transform:rotate(360deg)}}"
    )


def test_tokens_come_from_markup_and_scripts():
    tokens = page_tokens(
        "<div class='hover:bg-blue-500 md:w-1/2'></div><script>el.classList.add(\"hidden\"); x.className=`p-4`</script>"
    )
    assert {"hover:bg-blue-500", "md:w-1/2", "hidden", "p-4"} <= tokens


EVERY_CLASS = ["x", "y", "z", "group", "group-hover:x", "2xl:x", "w-1/2", "q", "sm:x", "sm:container"]


@settings(max_examples=25, deadline=None)
@given(st.sets(st.sampled_from(EVERY_CLASS)), st.sets(st.sampled_from(EVERY_CLASS)))
def test_more_classes_never_keep_fewer_rules(some, more):
    subset = TailwindSubset(CSS)
    page = lambda classes: f'<div class="{" ".join(sorted(classes))}">'  # noqa: E731
    assert set(subset.kept(page(some))) <= set(subset.kept(page(some | more)))
    # Every class used: the whole stylesheet, comments aside.
    assert subset.for_page(page(EVERY_CLASS)) == CSS.removeprefix("/*! header */")


def test_the_real_stylesheet_parses_whole():
    css = TAILWIND.read_text()
    subset = TailwindSubset(css)
    assert len(subset.rules) > 30_000
    every_class = {name for rule in subset.rules for classes in rule.selectors or () for name in classes}
    # A page naming every class gets the stylesheet back byte for byte, but for its two licence comments.
    assert subset.for_page(f'<div class="{" ".join(sorted(every_class))}">') == re.sub(r"^(/\*.*?\*/)+", "", css)
    page = subset.for_page('<body class="bg-gray-100"><header class="bg-green-500 md:flex hover:underline">')
    assert ".bg-green-500{" in page and "@media (min-width:768px){.md\\:flex{display:flex}}" in page
    assert len(page) < 20_000
