"""Text: URL slugs, team codes, word counts."""

from __future__ import annotations

import random

from sweetflow.backend.tasks.family import Family, Param, quoted

# --- blog publishing: string building word by word -------------------------------------------

_TITLE_WORDS = (
    "How",
    "to",
    "Grow",
    "Tomatoes",
    "in",
    "a",
    "Small",
    "Garden!",
    "The",
    "Best",
    "Bread",
    "of",
    "2023",
    "and",
    "Why",
    "I",
    "Love",
    "It",
    "for",
    "Beginners:",
    "with",
    "an",
    "Old",
    "Camera",
    "on",
    "at",
    "Sea",
)


def _slug_args(rng: random.Random) -> tuple:
    return (" ".join(rng.choice(_TITLE_WORDS) for _ in range(rng.randint(2, 9))),)


MAKE_SLUG = Family(
    name="make_slug",
    domain="blog publishing",
    personas=(
        "I write a travel blog.",
        "I host a weekly gardening podcast and post show notes online.",
        "I edit our school newspaper's website.",
        "I keep an online collection of my grandmother's recipes.",
    ),
    function_names=("make_slug", "slugify", "title_to_slug", "url_slug", "post_slug"),
    arguments={"title": ("title", "headline", "post_title", "heading")},
    request=(
        "Every post needs a short web address made from its title. Turn @title into that slug: lower case, "
        "punctuation removed, the little filler words and very short words dropped, joined with my usual "
        "separator and cut to my usual length. Return the slug."
    ),
    template="""\
def @fn(@title):
    words = []
    for raw in @title.lower().split():
        word = ''.join(ch for ch in raw if ch.isalnum())
        if len(word) >= ${min_word_length} and word not in ${stop_words}:
            words.append(word)
    return ${separator}.join(words[:${max_words}])
""",
    params=(
        Param("separator", "word separator", "Words are joined with {v!r}.", ("_", ".", "+"), "-"),
        Param(
            "stop_words",
            "filler words to drop",
            lambda v: f"I drop these filler words: {quoted(v)}.",
            (("a", "an", "the"), ("the", "of", "and"), ("the", "and", "for", "with"), ("the", "in", "on", "at", "to")),
            (),
        ),
        Param(
            "min_word_length",
            "shortest word kept",
            "Words shorter than {v} characters are dropped too.",
            (2, 3),
            1,
        ),
        Param(
            "max_words",
            "maximum number of words",
            "The slug keeps at most the first {v} words that are left.",
            (3, 4, 5, 6),
            8,
        ),
    ),
    make_args=_slug_args,
)


# --- team codes: initials, topping up and padding --------------------------------------------

_NAME_WORDS = (
    "The",
    "Old",
    "Riverside",
    "Rovers",
    "FC",
    "United",
    "of",
    "North",
    "Harbour",
    "Club",
    "and",
    "City",
    "Lions",
)


def _code_args(rng: random.Random) -> tuple:
    if rng.random() < 0.25:
        return (rng.choice(("Ox", "Al", "Bay", "Jo", "Kit")),)
    return (" ".join(rng.choice(_NAME_WORDS) for _ in range(rng.randint(1, 4))),)


TEAM_CODE = Family(
    name="team_code",
    domain="team codes",
    personas=(
        "I'm the secretary of our amateur football league and we show team codes on the scoreboard.",
        "I organise a conference and print short codes on the name badges.",
        "I label the shelves of a warehouse with short codes.",
        "I run a pub quiz league and need short codes for the team names.",
    ),
    function_names=("team_code", "short_code", "make_code", "abbreviate", "name_code", "code_for"),
    arguments={"name": ("name", "team_name", "full_name", "label")},
    request=(
        "I need short codes made from names. Take the first letter of each word of @name, skipping a few "
        "words that don't count; if that gives too few letters, top up with the rest of the last word. Codes "
        "are upper case and have a fixed length, filled up with a filler character when there aren't enough "
        "letters. Return the code."
    ),
    template="""\
def @fn(@name):
    words = [word for word in @name.split() if word.lower() not in ${skip_words}]
    letters = ''.join(word[0] for word in words)
    if len(letters) < ${code_length} and words:
        letters += words[-1][1:]
    return letters[:${code_length}].upper().ljust(${code_length}, ${pad_char})
""",
    params=(
        Param("code_length", "length of a code", "Codes are exactly {v} characters long.", (2, 4, 5), 3),
        Param(
            "skip_words",
            "words that are skipped",
            lambda v: f"These words are skipped, whatever their case: {quoted(v)}.",
            (("fc", "the"), ("the", "of"), ("club", "fc", "the"), ("and", "of", "the")),
            (),
        ),
        Param(
            "pad_char",
            "filler character",
            "Codes that come out short are filled up on the right with {v!r}.",
            ("Z", "0", "#", "-"),
            "X",
        ),
    ),
    make_args=_code_args,
)


# --- writing analytics: counting into a dict, sorting by count then word ---------------------

_VOCABULARY = (
    "the",
    "the",
    "and",
    "and",
    "that",
    "this",
    "with",
    "very",
    "just",
    "really",
    "have",
    "a",
    "I",
    "of",
    "rain",
    "rain",
    "garden",
    "garden",
    "garden",
    "light",
    "light",
    "story",
    "story",
    "river",
    "quiet",
    "dark",
    "go",
    "we",
    "it",
)
_PUNCTUATION = ("", "", "", ",", ".", "!", "?")


def _text_args(rng: random.Random) -> tuple:
    words = [rng.choice(_VOCABULARY) + rng.choice(_PUNCTUATION) for _ in range(rng.randint(10, 30))]
    words[0] = words[0].capitalize()
    return (" ".join(words),)


TOP_WORDS = Family(
    name="top_words",
    domain="writing analytics",
    personas=(
        "I'm writing a novel and want to catch the words I overuse.",
        "I write marketing copy and check my drafts for repetition.",
        "I teach English as a second language and look at my students' essays.",
        "I coach people in public speaking and go through their speech transcripts.",
    ),
    function_names=(
        "top_words",
        "word_frequencies",
        "common_words",
        "most_used_words",
        "frequent_words",
        "count_words",
    ),
    arguments={"text": ("text", "passage", "document", "draft")},
    request=(
        "I want to see which words show up most in @text. Count the words ignoring case and the punctuation "
        "around them, leave out the filler words and the very short words I don't care about, and give me "
        "the most frequent ones as a list of (word, count) pairs, most frequent first and alphabetical when "
        "counts tie."
    ),
    template="""\
def @fn(@text):
    counts = {}
    for raw in @text.lower().split():
        word = raw.strip('.,;:!?"()')
        if len(word) >= ${min_length} and word not in ${stop_words}:
            counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
    return ranked[:${top_k}]
""",
    params=(
        Param(
            "stop_words",
            "filler words to ignore",
            lambda v: f"I ignore these filler words: {quoted(v)}.",
            (
                ("the", "and", "that"),
                ("the", "with", "very"),
                ("and", "just", "really"),
                ("the", "this", "that", "have"),
            ),
            (),
        ),
        Param("min_length", "shortest word counted", "Words shorter than {v} letters are not counted.", (2, 3, 4), 1),
        Param("top_k", "number of words listed", "I want the top {v} words.", (3, 4, 5, 6), 10),
    ),
    make_args=_text_args,
)
