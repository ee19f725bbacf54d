"""The part of Tailwind's stylesheet a page can use, picked the way Tailwind's own purge picks it.

Chromium parses the whole 2.9 MB `tailwind.min.css` for every page it renders (request interception
turns its cache off): half of a page's rendering time. A page needs only the rules whose selectors
name classes it mentions. `TailwindSubset` parses the stylesheet once and, for a page, keeps

- a style rule when one of its selectors names only classes found among the page's tokens; a
  selector naming no class (`*`, `html`, `[type=button]`) always counts as found;
- `@media` blocks with the rules they keep (dropped when they keep none); a block nested in one
  of them whole when it keeps any rule;
- every other at-rule (`@keyframes`) whole;

in the stylesheet's own order, so the cascade is unchanged. A page's tokens are what Tailwind 2's
purge extracts from content: runs of characters other than whitespace, quotes, backticks and angle
brackets, and the pieces of those runs between `.()[]{}#=%`, so a class a script adds by name
counts too. As with Tailwind's purge, a class a script builds from pieces is not found.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

_TOKEN = re.compile(r"[^<>\"'`\s]*[^<>\"'`\s:]")
_INNER_TOKEN = re.compile(r"[^<>\"'`\s.(){}\[\]#=%]*[^<>\"'`\s.(){}\[\]#=%:]")
_CLASS = re.compile(r"\.((?:\\[0-9a-fA-F]{1,6}\s?|\\.|[\w-])+)")
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6}\s?|.)")


def page_tokens(html: str) -> set[str]:
    return set(_TOKEN.findall(html)) | set(_INNER_TOKEN.findall(html))


def _unescape(name: str) -> str:
    """A CSS identifier as written in markup: `hover\\:bg-blue-500` → `hover:bg-blue-500`, `\\32xl` → `2xl`."""

    def one(match: re.Match) -> str:
        escaped = match.group(1)
        if re.fullmatch(r"[0-9a-fA-F]{1,6}\s?", escaped):
            return chr(int(escaped.strip(), 16))
        return escaped

    return _ESCAPE.sub(one, name)


def _selector_classes(selector: str) -> frozenset[str]:
    return frozenset(_unescape(name) for name in _CLASS.findall(selector))


def _split_top(text: str, separator: str) -> list[str]:
    """`text` cut at `separator` where it is outside brackets and strings (`:not(a,b)` stays whole)."""
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


_SYNTAX = re.compile(r"/\*.*?\*/|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[{}]", re.DOTALL)
_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


def _blocks(css: str) -> list[tuple[str, str]]:
    """The top-level (prelude, body) pairs of a stylesheet, comments between them dropped. Braces in
    strings and comments do not count; the scan stops only at braces, strings and comments."""
    blocks, depth, start, open_at = [], 0, 0, 0
    for match in _SYNTAX.finditer(css):
        token = match.group()
        if token == "{":
            if depth == 0:
                open_at = match.start()
            depth += 1
        elif token == "}" and depth:
            depth -= 1
            if depth == 0:
                prelude = _COMMENT.sub("", css[start:open_at]).strip()
                blocks.append((prelude, css[open_at + 1 : match.start()]))
                start = match.end()
    return blocks  # an unclosed last block is dropped, as a browser drops it


@dataclass(frozen=True)
class _Rule:
    text: str
    media: int | None  # index of its @media block; None at top level
    selectors: tuple[frozenset[str], ...] | None  # classes each selector names; None: always kept


class TailwindSubset:
    def __init__(self, css: str):
        self.rules: list[_Rule] = []
        self.media: list[str] = []  # each @media block's prelude
        for prelude, body in _blocks(css):
            if prelude.startswith("@media"):
                self.media.append(prelude)
                for inner_prelude, inner_body in _blocks(body):
                    self._add(inner_prelude, inner_body, len(self.media) - 1)
            elif prelude.startswith("@"):
                self.rules.append(_Rule(f"{prelude}{{{body}}}", None, None))
            else:
                self._add(prelude, body, None)
        # Each rule under one class of each of its selectors: a page's tokens find their candidates.
        self._always: list[int] = []
        self._by_class: dict[str, list[int]] = defaultdict(list)
        for index, rule in enumerate(self.rules):
            if rule.selectors is None or any(not classes for classes in rule.selectors):
                self._always.append(index)
                continue
            for name in {min(classes) for classes in rule.selectors}:
                self._by_class[name].append(index)

    def _add(self, prelude: str, body: str, media: int | None) -> None:
        if prelude.startswith("@"):  # a block nested in @media (`.sm:container`'s own @media): whole or not at all
            preludes = [inner for inner, _ in _blocks(body)]
        else:
            preludes = [prelude]
        selectors = tuple(_selector_classes(s) for p in preludes for s in _split_top(p, ","))
        self.rules.append(_Rule(f"{prelude}{{{body}}}", media, selectors))

    def kept(self, html: str) -> list[int]:
        """The indices (into `rules`) of the rules the page can use, in the stylesheet's order."""
        tokens = page_tokens(html)
        kept = set(self._always)
        for name in tokens & self._by_class.keys():
            for index in self._by_class[name]:
                if any(classes <= tokens for classes in self.rules[index].selectors):
                    kept.add(index)
        return sorted(kept)

    def for_page(self, html: str) -> str:
        """The stylesheet for `html`: its kept rules, inside their @media blocks."""
        out, open_media = [], None
        for index in self.kept(html):
            rule = self.rules[index]
            if rule.media != open_media:
                if open_media is not None:
                    out.append("}")
                if rule.media is not None:
                    out.append(f"{self.media[rule.media]}{{")
                open_media = rule.media
            out.append(rule.text)
        if open_media is not None:
            out.append("}")
        return "".join(out)
