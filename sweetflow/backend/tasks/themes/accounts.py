"""Accounts and web services: user names, password strength, an API's rate limit."""

from __future__ import annotations

import random
import string

from sweetflow.backend.tasks.family import Family, Param, quoted

# --- account sign-up: early returns and an all() over characters -----------------------------

_RESERVED_WORDS = ("admin", "system", "moderator", "support", "official", "webmaster", "owner")


def _username_args(rng: random.Random) -> tuple:
    if rng.random() < 0.3:
        word = rng.choice(_RESERVED_WORDS)
        return (word.capitalize() if rng.random() < 0.5 else word,)
    rest = [rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(1, 17))]
    if rng.random() < 0.5:
        rest[rng.randrange(len(rest))] = rng.choice("_-.")
    first = rng.choice(string.ascii_letters if rng.random() < 0.9 else string.digits + "_")
    return (first + "".join(rest),)


USERNAME_CHECK = Family(
    name="username_check",
    domain="account sign-up",
    personas=(
        "I run a forum for birdwatchers.",
        "I host a small Minecraft server for my nephews and their friends.",
        "I look after the website of our school's robotics club.",
        "I run a recipe-sharing site as a hobby.",
    ),
    function_names=("is_valid_username", "check_username", "username_ok", "validate_username", "accept_username"),
    arguments={"username": ("username", "name", "handle")},
    request=(
        "People choose a username when they join and I want to check it before it's saved. Return True if "
        "@username follows my rules and False otherwise. There are limits on the length and on which symbols "
        "are allowed besides letters and digits, it has to start with a letter, and a few names are reserved "
        "however they're capitalised."
    ),
    template="""\
def @fn(@username):
    if not ${min_length} <= len(@username) <= ${max_length}:
        return False
    if not @username[0].isalpha() or @username.lower() in ${reserved}:
        return False
    return all(ch.isalnum() or ch in ${allowed_symbols} for ch in @username)
""",
    params=(
        Param("min_length", "minimum username length", "A username needs at least {v} characters.", (4, 5, 6), 3),
        Param(
            "max_length",
            "maximum username length",
            "A username can have at most {v} characters.",
            (10, 12, 15, 16),
            20,
        ),
        Param(
            "allowed_symbols",
            "allowed symbols",
            lambda v: f"Besides letters and digits, the only symbols allowed are {quoted(v)}.",
            ("-", ".", "_.", "_-", ".-"),
            "_",
        ),
        Param(
            "reserved",
            "reserved names",
            lambda v: f"These names are reserved: {quoted(v)}.",
            (
                ("admin", "system"),
                ("admin", "moderator"),
                ("admin", "support", "official"),
                ("admin", "webmaster", "owner"),
            ),
            ("admin",),
        ),
    ),
    make_args=_username_args,
)


# --- password security: summing booleans into a score, then labels --------------------------


def _password_args(rng: random.Random) -> tuple:
    pools = [string.ascii_lowercase, string.ascii_uppercase, string.digits, "!@#$%&*?"]
    used = rng.sample(pools, rng.randint(1, 4))
    return ("".join(rng.choice(rng.choice(used)) for _ in range(rng.randint(3, 16))),)


PASSWORD_STRENGTH = Family(
    name="password_strength",
    domain="password security",
    personas=(
        "I run a small web app for organising board game nights.",
        "I'm building the sign-up page for my family's photo-sharing site.",
        "I maintain the member portal for our rowing club.",
        "I run an online shop for knitting patterns.",
    ),
    function_names=("password_strength", "rate_password", "strength_label", "grade_password", "check_strength"),
    arguments={"password": ("password", "pw", "secret")},
    request=(
        "When someone sets a password I want to show how strong it is. Score @password my way: one point "
        "each for using lower case letters, upper case letters and digits, some points for using symbols, "
        "and points for length. Return 'weak', 'medium' or 'strong' depending on the score."
    ),
    template="""\
def @fn(@password):
    kinds = (str.islower, str.isupper, str.isdigit)
    score = sum(any(kind(ch) for ch in @password) for kind in kinds)
    if any(not ch.isalnum() for ch in @password):
        score += ${symbol_points}
    score += len(@password) // ${chars_per_point}
    if score >= ${strong_at}:
        return 'strong'
    if score >= ${medium_at}:
        return 'medium'
    return 'weak'
""",
    params=(
        Param(
            "symbol_points",
            "points for symbols",
            "Using at least one symbol (anything that is not a letter or digit) is worth {v} points.",
            (2, 3),
            1,
        ),
        Param(
            "chars_per_point",
            "points for length",
            "Length earns 1 point for every full {v} characters.",
            (2, 3, 5, 6),
            4,
        ),
        Param("strong_at", "score needed for strong", "A score of {v} or more is 'strong'.", (7, 8, 9), 6),
        Param(
            "medium_at",
            "score needed for medium",
            "A score of {v} or more, below the strong score, is 'medium'.",
            (2, 3, 5),
            4,
        ),
    ),
    make_args=_password_args,
)


# --- web APIs: a stateful loop over a sliding window -----------------------------------------


def _rate_limit_args(rng: random.Random) -> tuple:
    gaps = (0, 1, 1, 2, 2, 3, 4, 5, 8, 12, 20, 35)
    times = [rng.randint(0, 20)]
    for _ in range(rng.randint(5, 14)):
        times.append(times[-1] + rng.choice(gaps))
    return (times,)


RATE_LIMIT = Family(
    name="rate_limit",
    domain="web APIs",
    personas=(
        "I run a small public weather API as a side project.",
        "I wrote a chat bot for my gaming group and some people spam it.",
        "I maintain the homework upload portal for our school.",
        "I host a game server for a hobby community.",
    ),
    function_names=(
        "rate_limit",
        "accepted_requests",
        "allow_requests",
        "throttle",
        "limit_requests",
        "filter_requests",
    ),
    arguments={"timestamps": ("timestamps", "request_times", "times", "arrivals")},
    request=(
        "My server limits how often one client can make requests. @timestamps is the sorted list of times, "
        "in whole seconds, at which a client sent requests. Go through them in order and decide for each "
        "whether it's accepted under my limit on requests per time window; a client that hits the limit also "
        "gets a timeout. Rejected requests don't count toward the limit. Return a list of True/False, one per "
        "request."
    ),
    template="""\
def @fn(@timestamps):
    accepted = []
    decisions = []
    blocked_until = float('-inf')
    for t in @timestamps:
        recent = [a for a in accepted if t - a < ${window_seconds}]
        allowed = t >= blocked_until and len(recent) < ${max_requests}
        if allowed:
            accepted.append(t)
        else:
            blocked_until = t + ${timeout_seconds}
        decisions.append(allowed)
    return decisions
""",
    params=(
        Param(
            "max_requests",
            "requests allowed per window",
            "A client may have at most {v} accepted requests in a window.",
            (2, 3, 4, 6),
            5,
        ),
        Param(
            "window_seconds",
            "length of the time window",
            "The window is {v} seconds long: an accepted request still counts if it was less than {v} seconds ago.",
            (10, 20, 30, 90),
            60,
        ),
        Param(
            "timeout_seconds",
            "timeout after a rejection",
            "After a rejected request the client is blocked for {v} seconds; requests during the block are "
            "rejected and start the block again.",
            (5, 10, 15, 30),
            0,
        ),
    ),
    make_args=_rate_limit_args,
)
