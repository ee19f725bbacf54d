"""Families of ColBench-style backend tasks for the procedural generator.

A family is one parameterised programming task: a request a person makes (told through a persona),
a reference implementation template, and hidden parameters that the person knows but does not say.
An agent has to ask about each hidden parameter; guessing its obvious default gives wrong answers.

Two placeholder syntaxes appear in a family's texts:
- `@fn` and `@<role>` stand for the function name and the argument names. They are filled in when a
  task is drafted (`Family.fill_names`), so one family yields many differently named functions.
- `${param}` stands for a hidden parameter in the reference template. It is filled with
  `repr(value)` by `sweetflow.backend.tasks.procedural.render_reference`, with true values or guesses.

Standard library only.
"""

from __future__ import annotations

import math
import random
import string
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Callable


class _NameTemplate(string.Template):
    """`@name` placeholders, leaving the `${param}` placeholders of the reference untouched."""

    delimiter = "@"


@dataclass(frozen=True)
class Param:
    """A hidden fact: its true value is drawn from `choices`; `guess` is what a non-asker assumes."""

    name: str
    topic: str  # what the fact is about, in the words an agent would use to ask
    fact: str | Callable[[object], str]  # format string over `v`, or a function of the value
    choices: tuple
    guess: object

    def fact_for(self, value: object) -> str:
        return self.fact(value) if callable(self.fact) else self.fact.format(v=value)


@dataclass(frozen=True)
class Family:
    name: str
    domain: str
    personas: tuple[str, ...]
    function_names: tuple[str, ...]
    arguments: dict[str, tuple[str, ...]]  # role -> alternative names, in signature order
    request: str  # what the person asks for, without the persona and the signature line
    template: str
    params: tuple[Param, ...]
    make_args: Callable[[random.Random], tuple]  # one test call's arguments

    @property
    def capacity(self) -> int:
        """How many distinct references the family can produce."""
        name_choices = len(self.function_names) * math.prod(len(names) for names in self.arguments.values())
        return name_choices * math.prod(len(p.choices) for p in self.params)

    def fill_names(self, text: str, function_name: str, arg_names: dict[str, str]) -> str:
        return _NameTemplate(text).substitute(arg_names, fn=function_name)


def _quoted(items) -> str:
    """'a', 'b' and 'c' — for facts that list strings or characters exactly."""
    quoted = [repr(item) for item in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


# --- retail checkout: a ladder of discounts on a computed subtotal ----------------------------

_GOODS = ("bread", "muffin", "mug", "notebook", "candle", "jam", "scarf", "tea", "card")
_GOOD_PRICES = (2.5, 3.75, 4.0, 8.5, 12.0, 19.99, 27.5, 45.0)


def _order_args(rng: random.Random) -> tuple:
    items = [(rng.choice(_GOODS), rng.choice(_GOOD_PRICES), rng.randint(1, 6)) for _ in range(rng.randint(1, 4))]
    return items, rng.random() < 0.5


ORDER_TOTAL = Family(
    name="order_total",
    domain="retail checkout",
    personas=(
        "I run a small bakery and most of my customers are regulars.",
        "I sell teas and mugs from a little shop near the station.",
        "I own a second-hand bookshop that has a members' club.",
        "I run a farm stand on weekends and keep a list of loyal customers.",
        "I manage a craft supply store in my town.",
    ),
    function_names=("order_total", "checkout_total", "compute_order_total", "price_order", "total_due"),
    arguments={"items": ("items", "cart", "order_lines"), "is_member": ("is_member", "member", "has_card")},
    request=(
        "I want a function that works out what a customer pays at the till. @items is a list of "
        "(product name, unit price, quantity) tuples and @is_member says whether the customer is in my "
        "members' club. Members get a discount and big orders get something off as well, the way I always "
        "do it. Give back the amount rounded to cents."
    ),
    template="""\
def @fn(@items, @is_member):
    subtotal = sum(price * quantity for _, price, quantity in @items)
    if subtotal >= ${bulk_threshold}:
        subtotal *= 1 - ${bulk_discount}
    if @is_member:
        subtotal *= 1 - ${member_discount}
    return round(subtotal, 2)
""",
    params=(
        Param(
            "bulk_threshold",
            "big order threshold",
            "An order counts as big when its subtotal before any discount is {v} dollars or more.",
            (50, 75, 150, 200),
            100,
        ),
        Param("bulk_discount", "big order discount", "Big orders get {v:.0%} off.", (0.05, 0.08, 0.12, 0.15), 0.1),
        Param(
            "member_discount",
            "member discount",
            "Members get a further {v:.0%} off the price left after any big-order discount.",
            (0.05, 0.15, 0.2, 0.25),
            0.1,
        ),
    ),
    make_args=_order_args,
)


# --- school grading: an if/elif ladder of cutoffs --------------------------------------------


def _grade_args(rng: random.Random) -> tuple:
    score = rng.randint(40, 100)
    return (score - 0.5 if rng.random() < 0.25 else score,)


LETTER_GRADE = Family(
    name="letter_grade",
    domain="school grading",
    personas=(
        "I teach maths at a middle school and grade a bit differently from my colleagues.",
        "I'm a piano teacher and give my students letter grades after each recital.",
        "I run evening language classes for adults.",
        "I mentor students at a coding bootcamp and grade their projects.",
        "I'm a driving instructor and grade the practice tests my learners take.",
    ),
    function_names=("letter_grade", "grade_for_score", "to_letter", "score_to_grade", "grade_of"),
    arguments={"score": ("score", "points", "percent", "mark")},
    request=(
        "I'd like a function that turns a score into a letter grade on my own grading scale, which isn't "
        "quite the usual one. @score is a number between 0 and 100 and may include a half point. Return "
        "'A', 'B', 'C', 'D' or 'F'."
    ),
    template="""\
def @fn(@score):
    if @score >= ${a_cutoff}:
        return 'A'
    elif @score >= ${b_cutoff}:
        return 'B'
    elif @score >= ${c_cutoff}:
        return 'C'
    elif @score >= ${d_cutoff}:
        return 'D'
    return 'F'
""",
    params=(
        Param("a_cutoff", "cutoff for an A", "A score of {v} or more is an A.", (85, 88, 92, 93), 90),
        Param(
            "b_cutoff",
            "cutoff for a B",
            "A score of {v} or more, below the A cutoff, is a B.",
            (75, 78, 82, 83),
            80,
        ),
        Param(
            "c_cutoff",
            "cutoff for a C",
            "A score of {v} or more, below the B cutoff, is a C.",
            (65, 68, 72, 73),
            70,
        ),
        Param(
            "d_cutoff",
            "cutoff for a D",
            "A score of {v} or more, below the C cutoff, is a D; anything lower is an F.",
            (50, 55, 62, 63),
            60,
        ),
    ),
    make_args=_grade_args,
)


# --- library fines: dict lookup, grace period and a cap --------------------------------------


def _late_fee_args(rng: random.Random) -> tuple:
    return rng.randint(0, 30), rng.choice(("book", "dvd"))


LATE_FEE = Family(
    name="late_fee",
    domain="library fines",
    personas=(
        "I'm the librarian at a small town library.",
        "I run the lending desk of our community centre library.",
        "I look after the school library and its little film collection.",
        "I volunteer at the public library in our village on weekends.",
    ),
    function_names=("late_fee", "overdue_fine", "compute_late_fee", "fine_for_return", "return_fine"),
    arguments={
        "days_late": ("days_late", "days_overdue", "overdue_days"),
        "item_type": ("item_type", "kind", "category"),
    },
    request=(
        "When something comes back late I charge a fine, and I want a function to work it out. @days_late "
        "is how many days after the due date it came back (0 if on time) and @item_type is either 'book' or "
        "'dvd'. There's a grace period, the daily rate depends on the type of item, and the fine is capped. "
        "Return the fine in dollars, rounded to cents."
    ),
    template="""\
def @fn(@days_late, @item_type):
    daily_rates = {'book': ${book_rate}, 'dvd': ${dvd_rate}}
    charged_days = max(0, @days_late - ${grace_days})
    fine = charged_days * daily_rates[@item_type]
    return round(min(fine, ${max_fine}), 2)
""",
    params=(
        Param(
            "grace_days",
            "grace period",
            "The first {v} days late are free, and only the days after those are charged.",
            (1, 2, 3, 5),
            0,
        ),
        Param(
            "book_rate",
            "daily rate for books",
            "Books cost {v:.2f} dollars per charged day.",
            (0.1, 0.2, 0.3, 0.5),
            0.25,
        ),
        Param(
            "dvd_rate",
            "daily rate for DVDs",
            "DVDs cost {v:.2f} dollars per charged day.",
            (0.5, 0.75, 1.5, 2.0),
            1.0,
        ),
        Param("max_fine", "maximum fine", "The fine never goes above {v} dollars per item.", (5, 8, 15, 20), 10),
    ),
    make_args=_late_fee_args,
)


# --- parcel shipping: base price, per-kilo extra, destination multiplier ---------------------


def _shipping_args(rng: random.Random) -> tuple:
    return round(rng.uniform(0.1, 12.0), 1), rng.choice(("domestic", "international"))


SHIPPING_COST = Family(
    name="shipping_cost",
    domain="parcel shipping",
    personas=(
        "I sell handmade soap online and ship all over.",
        "I run a small online shop for vintage vinyl records.",
        "I make ceramic mugs and bowls and post them to customers.",
        "I import loose-leaf tea and send out orders from my garage.",
    ),
    function_names=("shipping_cost", "postage_for", "compute_shipping", "shipping_price", "parcel_cost"),
    arguments={"weight_kg": ("weight_kg", "weight", "kilos"), "destination": ("destination", "region", "zone")},
    request=(
        "I need to know what to charge for postage on a parcel. @weight_kg is the parcel's weight in "
        "kilograms and @destination is either 'domestic' or 'international'. There's a base price that covers "
        "light parcels, heavier ones pay extra per kilo, and sending abroad costs more. Return the price "
        "rounded to cents."
    ),
    template="""\
def @fn(@weight_kg, @destination):
    extra_kg = max(0, @weight_kg - ${included_kg})
    price = ${base_fee} + extra_kg * ${per_kg}
    if @destination == 'international':
        price *= ${intl_multiplier}
    return round(price, 2)
""",
    params=(
        Param("base_fee", "base postage price", "Every parcel starts at {v:.2f} dollars.", (3.5, 4.0, 6.0, 7.5), 5.0),
        Param(
            "included_kg",
            "weight covered by the base price",
            "The base price covers the first {v} kg.",
            (0.5, 2, 3, 5),
            1,
        ),
        Param(
            "per_kg",
            "price per extra kilo",
            "Each kilo above that costs {v:.2f} dollars, charged proportionally for part of a kilo.",
            (1.5, 2.0, 2.5, 3.0),
            1.0,
        ),
        Param(
            "intl_multiplier",
            "international surcharge",
            "International parcels cost {v} times the domestic price.",
            (1.5, 2.5, 3),
            2,
        ),
    ),
    make_args=_shipping_args,
)


# --- income tax: two progressive bands above an allowance ------------------------------------


def _tax_args(rng: random.Random) -> tuple:
    return (rng.randrange(0, 150_001, 500),)


INCOME_TAX = Family(
    name="income_tax",
    domain="income tax",
    personas=(
        "I do the books for a few freelancers in my building.",
        "I'm designing the economy for a tabletop role-playing campaign, and the towns collect taxes.",
        "I'm a retired accountant helping my neighbours estimate what they owe.",
        "I teach an evening class on personal finance and want a toy tax calculator for it.",
    ),
    function_names=("income_tax", "tax_owed", "compute_tax", "tax_due", "yearly_tax"),
    arguments={"income": ("income", "earnings", "taxable_income", "yearly_income")},
    request=(
        "I want a function that computes the tax owed on @income, a yearly income in dollars. It's progressive: "
        "the first part is tax-free, the next band is taxed at one rate and everything above a higher threshold at a "
        "bigger rate. Return the tax rounded to whole dollars."
    ),
    template="""\
def @fn(@income):
    tax = 0.0
    if @income > ${high_threshold}:
        tax += (@income - ${high_threshold}) * ${high_rate}
    basic_band = min(@income, ${high_threshold}) - ${allowance}
    if basic_band > 0:
        tax += basic_band * ${basic_rate}
    return round(tax)
""",
    params=(
        Param(
            "allowance",
            "tax-free allowance",
            "The first {v} dollars of income are tax-free.",
            (8000, 12000, 12500, 15000),
            10000,
        ),
        Param(
            "basic_rate",
            "basic tax rate",
            "Income between the allowance and the higher threshold is taxed at {v:.0%}.",
            (0.1, 0.15, 0.25),
            0.2,
        ),
        Param(
            "high_threshold",
            "higher rate threshold",
            "Income above {v} dollars is taxed at the higher rate.",
            (40000, 45000, 60000, 75000),
            50000,
        ),
        Param("high_rate", "higher tax rate", "The higher rate is {v:.0%}.", (0.35, 0.45, 0.5), 0.4),
    ),
    make_args=_tax_args,
)


# --- loyalty programme: a loop accumulating points with a tier multiplier --------------------


def _loyalty_args(rng: random.Random) -> tuple:
    purchases = [round(rng.uniform(1, 260), 2) for _ in range(rng.randint(1, 5))]
    return purchases, rng.choice(("regular", "silver", "gold"))


LOYALTY_POINTS = Family(
    name="loyalty_points",
    domain="loyalty programme",
    personas=(
        "I run a coffee shop with a points card for regulars.",
        "I own a pet supply store with a rewards programme.",
        "I manage a hair salon that gives points on every visit.",
        "I run a bowling alley with a loyalty card.",
    ),
    function_names=("loyalty_points", "points_earned", "award_points", "compute_points", "reward_points"),
    arguments={"purchases": ("purchases", "amounts", "receipts"), "tier": ("tier", "level", "status")},
    request=(
        "Customers collect points on what they spend and I need to work out how many they earned. "
        "@purchases is a list of purchase amounts in dollars and @tier is 'regular', 'silver' or 'gold'. "
        "Points come from each whole dollar spent, the higher tiers earn more and a large single purchase "
        "earns a bonus. Return the total points as a whole number, rounded down."
    ),
    template="""\
def @fn(@purchases, @tier):
    multiplier = {'silver': ${silver_multiplier}, 'gold': ${gold_multiplier}}.get(@tier, 1)
    points = 0
    for amount in @purchases:
        points += int(amount) * ${points_per_dollar} * multiplier
        if amount >= ${bonus_threshold}:
            points += ${bonus_points}
    return int(points)
""",
    params=(
        Param(
            "points_per_dollar",
            "points per dollar",
            "Every whole dollar of a purchase earns {v} points; cents don't count.",
            (2, 3, 5),
            1,
        ),
        Param(
            "silver_multiplier",
            "silver tier multiplier",
            "Silver customers earn {v} times the normal points.",
            (1.25, 1.75, 2),
            1.5,
        ),
        Param(
            "gold_multiplier",
            "gold tier multiplier",
            "Gold customers earn {v} times the normal points.",
            (2.5, 3, 4),
            2,
        ),
        Param(
            "bonus_threshold",
            "large purchase threshold",
            "A single purchase of {v} dollars or more counts as large.",
            (50, 75, 150, 200),
            100,
        ),
        Param(
            "bonus_points",
            "large purchase bonus",
            "Each large purchase earns {v} bonus points, which the tier does not multiply.",
            (5, 20, 25, 50),
            10,
        ),
    ),
    make_args=_loyalty_args,
)


# --- bill splitting: conditional rate and rounding up to a step ------------------------------


def _split_bill_args(rng: random.Random) -> tuple:
    return round(rng.uniform(20, 600), 2), rng.randint(1, 14)


SPLIT_BILL = Family(
    name="split_bill",
    domain="bill splitting",
    personas=(
        "I organise a monthly dinner club with friends from work.",
        "Our hiking group always eats out after a long walk.",
        "I coordinate the team lunch at my office every Friday.",
        "My book club meets at a different restaurant each month.",
    ),
    function_names=("split_bill", "share_per_person", "bill_share", "each_pays", "per_person_cost"),
    arguments={"bill": ("bill", "total", "check_amount"), "people": ("people", "diners", "group_size")},
    request=(
        "After we eat I want to know how much each of us puts in. @bill is the bill before the tip and "
        "@people is how many of us are paying. We have our own habits about the tip, about bigger groups and "
        "about rounding up each share. Return each person's share in dollars."
    ),
    template="""\
def @fn(@bill, @people):
    import math
    rate = ${large_group_tip} if @people >= ${large_group_size} else ${tip_rate}
    share_cents = round(@bill * (1 + rate) / @people * 100, 6)
    step = ${round_up_cents}
    return math.ceil(share_cents / step) * step / 100
""",
    params=(
        Param("tip_rate", "usual tip", "We normally tip {v:.0%} of the bill.", (0.1, 0.12, 0.18), 0.15),
        Param(
            "large_group_size",
            "size of a big group",
            "A group of {v} or more people counts as big.",
            (4, 5, 6, 10),
            8,
        ),
        Param(
            "large_group_tip",
            "tip for big groups",
            "Big groups tip {v:.0%} instead of the usual rate.",
            (0.2, 0.22, 0.25),
            0.18,
        ),
        Param(
            "round_up_cents",
            "rounding of each share",
            "Each share is rounded up to the next multiple of {v} cents.",
            (5, 50, 100, 500),
            1,
        ),
    ),
    make_args=_split_bill_args,
)


# --- weather logging: list comprehensions for correction, filtering and conversion -----------


def _temperature_args(rng: random.Random) -> tuple:
    return ([round(rng.uniform(-60, 70), 1) for _ in range(rng.randint(3, 8))],)


CONVERT_TEMPERATURES = Family(
    name="convert_temperatures",
    domain="weather logging",
    personas=(
        "I keep a backyard weather station and log its readings.",
        "I brew beer at home and track my fermentation temperatures.",
        "I look after a big reef aquarium and note the water temperature.",
        "I teach chemistry and my students log lab temperatures.",
    ),
    function_names=("convert_temperatures", "to_fahrenheit", "convert_readings", "clean_readings", "fahrenheit_log"),
    arguments={"readings": ("readings", "temps", "celsius_values", "measurements")},
    request=(
        "My thermometer logs in Celsius but I keep my notes in Fahrenheit. @readings is a list of raw Celsius "
        "readings. I want them corrected the way I always correct my sensor, the impossible ones thrown out, "
        "converted, and rounded the way I like. Return the list in the original order."
    ),
    template="""\
def @fn(@readings):
    corrected = [reading + ${calibration_offset} for reading in @readings]
    believable = [c for c in corrected if ${lowest_valid} <= c <= ${highest_valid}]
    return [round(c * 9 / 5 + 32, ${decimals}) for c in believable]
""",
    params=(
        Param(
            "calibration_offset",
            "sensor correction",
            "My sensor is off, so I first add {v:+} degrees Celsius to every raw reading.",
            (-1.0, -0.5, 0.3, 0.8),
            0.0,
        ),
        Param(
            "lowest_valid",
            "lowest believable reading",
            "After the correction, readings below {v} degrees Celsius are errors and are dropped.",
            (-40, -30, -20, -10),
            -50,
        ),
        Param(
            "highest_valid",
            "highest believable reading",
            "After the correction, readings above {v} degrees Celsius are errors and are dropped.",
            (40, 45, 50, 55),
            60,
        ),
        Param("decimals", "rounding of results", "I round the Fahrenheit values to {v} decimal places.", (0, 2), 1),
    ),
    make_args=_temperature_args,
)


# --- league standings: sorting with a key, then slicing --------------------------------------

_PLAYERS = ("Ana", "Ben", "Chloe", "Dev", "Emil", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kira", "Lars")


def _standings_args(rng: random.Random) -> tuple:
    names = rng.sample(_PLAYERS, rng.randint(3, 10))
    return ([(name, rng.randint(0, 8), rng.randint(0, 5), rng.randint(0, 8)) for name in names],)


LEAGUE_STANDINGS = Family(
    name="league_standings",
    domain="league standings",
    personas=(
        "I run the Tuesday night five-a-side football league.",
        "I keep the table for our chess club's round-robin.",
        "I organise a kids' table tennis league at the community centre.",
        "I run an online league for a card game with friends.",
    ),
    function_names=("standings", "top_players", "league_leaders", "rank_players", "leaderboard"),
    arguments={"results": ("results", "records", "table_rows")},
    request=(
        "I want the top of the league table. @results is a list of (name, wins, draws, losses) tuples. "
        "Points come from wins, draws and losses by my league's rules; more points rank higher and ties go "
        "in alphabetical order. Return only the names of the top players, best first."
    ),
    template="""\
def @fn(@results):
    def points(row):
        _, wins, draws, losses = row
        return wins * ${win_points} + draws * ${draw_points} + losses * ${loss_points}
    ranked = sorted(@results, key=lambda row: (-points(row), row[0]))
    return [row[0] for row in ranked[:${top_n}]]
""",
    params=(
        Param("win_points", "points for a win", "A win is worth {v} points.", (2, 4, 5, 6), 3),
        Param("draw_points", "points for a draw", "A draw is worth {v} points.", (0, 2), 1),
        Param("loss_points", "points for a loss", "A loss is worth {v} points.", (-1, 1), 0),
        Param("top_n", "how many players to list", "I only want the top {v} names.", (2, 4, 5, 6, 8), 3),
    ),
    make_args=_standings_args,
)


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
            lambda v: f"Besides letters and digits, the only symbols allowed are {_quoted(v)}.",
            ("-", ".", "_.", "_-", ".-"),
            "_",
        ),
        Param(
            "reserved",
            "reserved names",
            lambda v: f"These names are reserved: {_quoted(v)}.",
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


# --- stock control: building a dict over items with ceil to pack sizes -----------------------

_STOCK_ITEMS = ("nails", "screws", "tape", "glue", "hinges", "paint", "brushes", "gloves")


def _reorder_args(rng: random.Random) -> tuple:
    items = rng.sample(_STOCK_ITEMS, rng.randint(2, 5))
    return {item: rng.randint(0, 200) for item in items}, {item: rng.randint(1, 15) for item in items}


REORDER_PLAN = Family(
    name="reorder_plan",
    domain="stock control",
    personas=(
        "I run a hardware store and reorder stock every Monday.",
        "I manage the supply cupboard for a primary school.",
        "I look after the stores of a small building firm.",
        "I keep the spare parts store for a bike repair workshop.",
    ),
    function_names=("reorder_plan", "items_to_reorder", "restock_order", "what_to_order", "build_order"),
    arguments={
        "stock": ("stock", "on_hand", "inventory"),
        "daily_sales": ("daily_sales", "daily_use", "usage_per_day"),
    },
    request=(
        "Each week I decide what to reorder. @stock maps each item to the units I have now and @daily_sales "
        "maps each item to how many units go out per day on average. Work out which items need reordering "
        "and how many units to order, following my rules about delivery time, a safety margin and pack "
        "sizes. Return a dict of item to units to order, only for the items that need it."
    ),
    template="""\
def @fn(@stock, @daily_sales):
    import math
    order = {}
    for item, per_day in @daily_sales.items():
        have = @stock.get(item, 0)
        if have <= per_day * (${lead_days} + ${safety_days}):
            packs = max(1, math.ceil((per_day * ${cover_days} - have) / ${pack_size}))
            order[item] = packs * ${pack_size}
    return order
""",
    params=(
        Param(
            "lead_days",
            "delivery time",
            "Deliveries take {v} days, so an item needs reordering when its stock would not last that long "
            "plus the safety margin.",
            (3, 5, 10, 14),
            7,
        ),
        Param("safety_days", "safety margin", "The safety margin is {v} extra days of sales.", (1, 2, 3, 5), 0),
        Param(
            "cover_days",
            "days an order should cover",
            "An order should bring the stock up to {v} days of sales.",
            (14, 21, 45, 60),
            30,
        ),
        Param(
            "pack_size",
            "pack size",
            "Everything comes in packs of {v}, so I order whole packs, at least one.",
            (6, 10, 12, 24),
            1,
        ),
    ),
    make_args=_reorder_args,
)


# --- car parks: free period, started blocks, daily cap ---------------------------------------


def _parking_args(rng: random.Random) -> tuple:
    return (rng.randint(1, 60) if rng.random() < 0.3 else rng.randint(1, 900),)


PARKING_FEE = Family(
    name="parking_fee",
    domain="car parks",
    personas=(
        "I manage the car park at a small regional hospital.",
        "I look after the parking lot behind our church, which we rent out on weekdays.",
        "I run the garage under a city hotel.",
        "I manage a park-and-ride lot near the train station.",
    ),
    function_names=("parking_fee", "parking_charge", "fee_for_stay", "compute_parking", "parking_price"),
    arguments={"minutes": ("minutes", "minutes_parked", "duration", "stay_minutes")},
    request=(
        "Drivers pay when they leave and I want to compute the fee. @minutes is how long the car stayed. "
        "Short stays are free; otherwise time is charged per started block at an hourly rate, up to a maximum "
        "fee. Return the fee in dollars, rounded to cents."
    ),
    template="""\
def @fn(@minutes):
    import math
    if @minutes <= ${free_minutes}:
        return 0.0
    blocks = math.ceil(@minutes / ${block_minutes})
    fee = blocks * ${block_minutes} / 60 * ${hourly_rate}
    return round(min(fee, ${daily_max}), 2)
""",
    params=(
        Param(
            "free_minutes",
            "free short stay",
            "Stays of up to {v} minutes are free; longer stays pay for the whole time.",
            (10, 20, 30, 45),
            15,
        ),
        Param(
            "block_minutes",
            "billing block",
            "Time is charged in blocks of {v} minutes, and every started block counts.",
            (15, 20, 30),
            60,
        ),
        Param(
            "hourly_rate",
            "hourly rate",
            "Parking costs {v:.2f} dollars an hour, and a block costs its share of that.",
            (2.5, 3.0, 4.0, 5.0),
            2.0,
        ),
        Param("daily_max", "maximum fee", "Nobody pays more than {v} dollars.", (12, 15, 18, 25), 20),
    ),
    make_args=_parking_args,
)


# --- appointment booking: a while loop building formatted time strings -----------------------

# Every start time a schedule of 15, 20, 30 or 45 minute slots from a whole hour can have.
_START_TIMES = tuple(f"{hour:02d}:{minute:02d}" for hour in range(7, 19) for minute in (0, 15, 20, 30, 40, 45))


def _slots_args(rng: random.Random) -> tuple:
    return (sorted(rng.sample(_START_TIMES, rng.randint(1, 8))),)


FREE_SLOTS = Family(
    name="free_slots",
    domain="appointment booking",
    personas=(
        "I'm a hairdresser working from a small salon.",
        "I'm a physiotherapist with a one-room practice.",
        "I groom dogs in a converted garage.",
        "I tutor students in my living room.",
    ),
    function_names=("free_slots", "open_slots", "available_times", "bookable_slots", "remaining_slots"),
    arguments={"booked": ("booked", "taken", "booked_times")},
    request=(
        "I want to see which appointment start times are still free on a working day. @booked is a list of "
        "'HH:MM' start times that are already taken. Use my working hours, my appointment length and my "
        "lunch break. Return the free start times as 'HH:MM' strings in order."
    ),
    template="""\
def @fn(@booked):
    free = []
    start = ${open_hour} * 60
    while start + ${slot_minutes} <= ${close_hour} * 60:
        label = f'{start // 60:02d}:{start % 60:02d}'
        if start // 60 != ${lunch_hour} and label not in @booked:
            free.append(label)
        start += ${slot_minutes}
    return free
""",
    params=(
        Param("open_hour", "start of the working day", "My first appointment starts at {v}:00.", (7, 8, 10), 9),
        Param(
            "close_hour",
            "end of the working day",
            "Every appointment must be over by {v}:00.",
            (15, 16, 18, 19),
            17,
        ),
        Param(
            "slot_minutes",
            "appointment length",
            "Each appointment takes {v} minutes and they run back to back from the first one.",
            (15, 20, 30, 45),
            60,
        ),
        Param(
            "lunch_hour",
            "lunch break",
            "I take lunch from {v}:00 to {v}:59, so no appointment starts in that hour.",
            (11, 13, 14),
            12,
        ),
    ),
    make_args=_slots_args,
)


# --- opening hours: branching on the day, then a range check ---------------------------------

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _opening_args(rng: random.Random) -> tuple:
    day = rng.choice(_WEEKDAYS[5:] if rng.random() < 0.4 else _WEEKDAYS[:5])
    hour = rng.randint(6, 21)
    return day, hour + 0.5 if rng.random() < 0.3 else hour


IS_OPEN = Family(
    name="is_open",
    domain="opening hours",
    personas=(
        "I run a food truck that parks at the same spot every day.",
        "I work the front desk of a small local museum.",
        "I manage our town's outdoor swimming pool.",
        "I run a phone help line for a software company.",
    ),
    function_names=("is_open", "open_at", "is_open_at", "accepting_visitors", "currently_open"),
    arguments={"day": ("day", "weekday", "day_name"), "hour": ("hour", "time", "hour_of_day")},
    request=(
        "I want a function that says whether we are open at a given moment. @day is the weekday's name, like "
        "'Friday', and @hour is the time on a 24-hour clock as a number (13.5 means half past one in the "
        "afternoon). Weekdays and weekends have different hours, and there's one day a week when we're "
        "closed. Return True or False."
    ),
    template="""\
def @fn(@day, @hour):
    if @day == ${closed_day}:
        return False
    if @day in ('Saturday', 'Sunday'):
        return ${weekend_open} <= @hour < ${weekend_close}
    return ${weekday_open} <= @hour < ${weekday_close}
""",
    params=(
        Param("weekday_open", "weekday opening time", "On weekdays we open at {v}:00.", (7, 8, 10), 9),
        Param(
            "weekday_close",
            "weekday closing time",
            "On weekdays we close at {v}:00, and at that exact time we're already closed.",
            (16, 18, 20),
            17,
        ),
        Param("weekend_open", "weekend opening time", "On Saturdays and Sundays we open at {v}:00.", (9, 11, 12), 10),
        Param(
            "weekend_close",
            "weekend closing time",
            "On Saturdays and Sundays we close at {v}:00.",
            (14, 15, 17),
            16,
        ),
        Param(
            "closed_day",
            "day we are closed",
            "We're closed all day on {v}s.",
            ("Monday", "Tuesday", "Wednesday", "Thursday"),
            "Sunday",
        ),
    ),
    make_args=_opening_args,
)


# --- blog publishing: string building word by word -------------------------------------------

_TITLE_WORDS = (
    "How", "to", "Grow", "Tomatoes", "in", "a", "Small", "Garden!", "The", "Best", "Bread", "of", "2023",
    "and", "Why", "I", "Love", "It", "for", "Beginners:", "with", "an", "Old", "Camera", "on", "at", "Sea",
)  # fmt: skip


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
            lambda v: f"I drop these filler words: {_quoted(v)}.",
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
    "The", "Old", "Riverside", "Rovers", "FC", "United", "of", "North", "Harbour", "Club", "and", "City", "Lions",
)  # fmt: skip


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
            lambda v: f"These words are skipped, whatever their case: {_quoted(v)}.",
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
    "the", "the", "and", "and", "that", "this", "with", "very", "just", "really", "have", "a", "I", "of",
    "rain", "rain", "garden", "garden", "garden", "light", "light", "story", "story", "river", "quiet",
    "dark", "go", "we", "it",
)  # fmt: skip
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
        "top_words", "word_frequencies", "common_words", "most_used_words", "frequent_words", "count_words",
    ),  # fmt: skip
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
            lambda v: f"I ignore these filler words: {_quoted(v)}.",
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


# --- exam curving: a shift from the maximum, then clamping each score ------------------------


def _curve_args(rng: random.Random) -> tuple:
    scores = [rng.randint(5, 100) for _ in range(rng.randint(3, 10))]
    if rng.random() < 0.3:
        scores[rng.randrange(len(scores))] = rng.randint(97, 100)
    return (scores,)


CURVE_SCORES = Family(
    name="curve_scores",
    domain="exam curving",
    personas=(
        "I teach a university statistics course and my last exam was too hard.",
        "I'm a high school physics teacher and curve my tests when the class struggles.",
        "I run a certification course for lifeguards and curve the written exam.",
        "I teach night classes in accounting and curve the final exam.",
    ),
    function_names=("curve_scores", "apply_curve", "curved_scores", "adjust_scores", "curve_exam"),
    arguments={"scores": ("scores", "raw_scores", "marks")},
    request=(
        "I want to curve an exam. @scores is the list of raw scores. Everyone gets shifted up so the top "
        "score reaches my target, everyone gets the extra points I promised, and the results stay within my "
        "limits. Return the curved scores as whole numbers in the same order."
    ),
    template="""\
def @fn(@scores):
    shift = max(0, ${target_top} - max(@scores))
    curved = []
    for score in @scores:
        new_score = score + shift + ${bonus_points}
        curved.append(round(min(${cap_score}, max(${floor_score}, new_score))))
    return curved
""",
    params=(
        Param(
            "target_top",
            "target for the top score",
            "Everyone is shifted up by the same amount so the best raw score becomes {v}; if it's already "
            "that high, nobody is shifted.",
            (90, 95, 98),
            100,
        ),
        Param(
            "bonus_points",
            "promised extra points",
            "After the shift, every score goes up by another {v}.",
            (1, 2, 3, 5),
            0,
        ),
        Param("floor_score", "lowest curved score", "No curved score goes below {v}.", (30, 40, 50), 0),
        Param("cap_score", "highest curved score", "No curved score goes above {v}.", (105, 110, 120), 100),
    ),
    make_args=_curve_args,
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
        "rate_limit", "accepted_requests", "allow_requests", "throttle", "limit_requests", "filter_requests",
    ),  # fmt: skip
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


# --- wholesale pricing: a loop over tiers with an early break --------------------------------


def _volume_args(rng: random.Random) -> tuple:
    quantity = rng.randint(1, 30) if rng.random() < 0.5 else rng.randint(1, 300)
    return quantity, rng.choice((0.5, 1.25, 2.0, 4.99, 12.5))


VOLUME_PRICE = Family(
    name="volume_price",
    domain="wholesale pricing",
    personas=(
        "I sell roasted coffee beans wholesale to cafés.",
        "I run a print shop that does flyers and posters.",
        "I print custom T-shirts for clubs and schools.",
        "I sell seedlings by the tray to gardeners and landscapers.",
    ),
    function_names=("order_cost", "volume_price", "bulk_price", "quote_order", "price_for_quantity"),
    arguments={"quantity": ("quantity", "units", "qty"), "unit_price": ("unit_price", "list_price", "price_each")},
    request=(
        "The more someone orders, the cheaper it gets. Given @quantity and the normal @unit_price, return the "
        "total for the order with the right volume discount, rounded to cents. I have two discount tiers."
    ),
    template="""\
def @fn(@quantity, @unit_price):
    tiers = [(${big_tier_qty}, ${big_tier_discount}), (${small_tier_qty}, ${small_tier_discount})]
    discount = 0
    for min_quantity, rate in tiers:
        if @quantity >= min_quantity:
            discount = rate
            break
    return round(@quantity * @unit_price * (1 - discount), 2)
""",
    params=(
        Param(
            "small_tier_qty",
            "quantity for the first tier",
            "Orders of {v} units or more get the first-tier discount.",
            (5, 12, 20, 25),
            10,
        ),
        Param(
            "small_tier_discount",
            "first tier discount",
            "The first tier takes {v:.0%} off the whole order.",
            (0.03, 0.05, 0.08),
            0.1,
        ),
        Param(
            "big_tier_qty",
            "quantity for the second tier",
            "Orders of {v} units or more get the second-tier discount instead.",
            (50, 75, 200, 250),
            100,
        ),
        Param(
            "big_tier_discount",
            "second tier discount",
            "The second tier takes {v:.0%} off the whole order.",
            (0.12, 0.15, 0.25, 0.3),
            0.2,
        ),
    ),
    make_args=_volume_args,
)


# --- gym membership: base fee with included classes and an age concession --------------------


def _membership_args(rng: random.Random) -> tuple:
    return rng.randint(0, 20), rng.randint(8, 85)


MEMBERSHIP_FEE = Family(
    name="membership_fee",
    domain="gym membership",
    personas=(
        "I own a small neighbourhood gym.",
        "I run a yoga studio with a monthly membership.",
        "I manage a bouldering gym.",
        "I teach at a martial arts school and handle the billing.",
    ),
    function_names=("monthly_fee", "membership_fee", "monthly_bill", "bill_member", "member_charge"),
    arguments={"visits": ("visits", "classes", "sessions"), "age": ("age", "member_age", "years")},
    request=(
        "Each month I bill members by how many classes they came to. @visits is the number of classes this "
        "month and @age is the member's age. There's a base fee that includes some classes, extra classes are "
        "paid one by one, and members under 18 or aged 65 and over get a reduction on the whole bill. Return "
        "the amount, rounded to cents."
    ),
    template="""\
def @fn(@visits, @age):
    extra_classes = max(0, @visits - ${included_classes})
    fee = ${base_fee} + extra_classes * ${extra_class_price}
    if @age < 18 or @age >= 65:
        fee *= 1 - ${concession_discount}
    return round(fee, 2)
""",
    params=(
        Param("base_fee", "monthly base fee", "The base fee is {v} dollars a month.", (30, 35, 45, 50), 40),
        Param(
            "included_classes",
            "classes included in the base fee",
            "The base fee includes {v} classes.",
            (4, 6, 10, 12),
            8,
        ),
        Param(
            "extra_class_price",
            "price of an extra class",
            "Every class beyond those costs {v} dollars.",
            (5, 7.5, 12, 15),
            10,
        ),
        Param(
            "concession_discount",
            "reduction for young and senior members",
            "Young and senior members get {v:.0%} off.",
            (0.2, 0.25, 0.3, 0.4),
            0.5,
        ),
    ),
    make_args=_membership_args,
)


# --- gardening: a dict of rates used inside a list comprehension ------------------------------


def _watering_args(rng: random.Random) -> tuple:
    kinds, litres = ("succulent", "herb", "fern"), (0.5, 1, 2, 3.5, 5, 10)
    plants = [(rng.choice(kinds), rng.choice(litres)) for _ in range(rng.randint(1, 5))]
    return plants, rng.random() < 0.5


WATER_AMOUNTS = Family(
    name="water_amounts",
    domain="gardening",
    personas=(
        "I'm a hobby gardener with a balcony full of pots.",
        "I look after the plants in our office.",
        "I coordinate the watering in our community garden's greenhouse.",
        "I keep a big collection of houseplants in my flat.",
    ),
    function_names=("water_amounts", "watering_plan", "weekly_water", "water_needed", "plan_watering"),
    arguments={"plants": ("plants", "pots", "collection"), "is_summer": ("is_summer", "summer", "hot_season")},
    request=(
        "I want to know how much water each plant gets per week. @plants is a list of (kind, pot size in "
        "litres) pairs, where kind is 'succulent', 'herb' or 'fern', and @is_summer says whether it's summer. "
        "Each kind gets its own amount per litre of pot, and everything gets more in summer. Return a list of "
        "whole millilitres, one per plant."
    ),
    template="""\
def @fn(@plants, @is_summer):
    ml_per_litre = {'succulent': ${succulent_ml}, 'herb': ${herb_ml}, 'fern': ${fern_ml}}
    factor = ${summer_factor} if @is_summer else 1
    return [round(ml_per_litre[kind] * litres * factor) for kind, litres in @plants]
""",
    params=(
        Param(
            "succulent_ml",
            "water for succulents",
            "Succulents get {v} ml per litre of pot a week.",
            (20, 30, 40),
            50,
        ),
        Param("herb_ml", "water for herbs", "Herbs get {v} ml per litre of pot a week.", (80, 120, 150), 100),
        Param("fern_ml", "water for ferns", "Ferns get {v} ml per litre of pot a week.", (150, 250, 300), 200),
        Param(
            "summer_factor",
            "extra water in summer",
            "In summer every plant gets {v} times its usual amount.",
            (1.25, 1.75, 2),
            1.5,
        ),
    ),
    make_args=_watering_args,
)


# --- holiday rentals: if/elif/else on notice, then a fee ---------------------------------------


def _refund_args(rng: random.Random) -> tuple:
    return round(rng.uniform(40, 900), 2), rng.randint(0, 45)


CANCELLATION_REFUND = Family(
    name="cancellation_refund",
    domain="holiday rentals",
    personas=(
        "I rent out a holiday cottage by the sea.",
        "I run a bed and breakfast in the hills.",
        "I manage a campsite with a few cabins.",
        "I run a kayak rental business that takes bookings ahead.",
    ),
    function_names=("refund_amount", "cancellation_refund", "compute_refund", "refund_due", "refund_for"),
    arguments={
        "amount_paid": ("amount_paid", "paid", "booking_total"),
        "days_before": ("days_before", "days_notice", "notice_days"),
    },
    request=(
        "When a guest cancels I refund part of what they paid, depending on how early they cancel. "
        "@amount_paid is what they paid and @days_before is how many days before arrival they cancelled. "
        "Early cancellations get everything back, later ones get part of it, very late ones get nothing, and "
        "I always keep an admin fee. Return the refund rounded to cents, never below zero."
    ),
    template="""\
def @fn(@amount_paid, @days_before):
    if @days_before >= ${full_refund_days}:
        share = 1.0
    elif @days_before >= ${partial_refund_days}:
        share = ${partial_share}
    else:
        share = 0.0
    return round(max(0.0, @amount_paid * share - ${admin_fee}), 2)
""",
    params=(
        Param(
            "full_refund_days",
            "notice for a full refund",
            "Cancelling {v} or more days before arrival gets a full refund.",
            (14, 21, 30),
            7,
        ),
        Param(
            "partial_refund_days",
            "notice for a partial refund",
            "Cancelling at least {v} days before arrival, but too late for a full refund, gets a partial refund.",
            (1, 2, 5),
            3,
        ),
        Param(
            "partial_share",
            "size of a partial refund",
            "A partial refund is {v:.0%} of what they paid.",
            (0.25, 0.3, 0.75),
            0.5,
        ),
        Param("admin_fee", "admin fee", "I keep an admin fee of {v} dollars out of every refund.", (5, 15, 20, 25), 10),
    ),
    make_args=_refund_args,
)


# --- quiz nights: a loop with a streak counter ----------------------------------------------

_ANSWERS = ("Paris", "Nile", "Mars", "Einstein", "Oxygen", "Tokyo", "Seven", "Blue", "Everest", "Mozart")


def _quiz_args(rng: random.Random) -> tuple:
    key = [rng.choice(_ANSWERS) for _ in range(rng.randint(5, 12))]
    answers = []
    for right in key:
        roll = rng.random()
        if roll < 0.6:
            answers.append(right.lower() if rng.random() < 0.3 else right)
        else:
            answers.append("" if roll < 0.75 else rng.choice(_ANSWERS))
    return answers, key


QUIZ_SCORE = Family(
    name="quiz_score",
    domain="quiz nights",
    personas=(
        "I host a pub quiz every Thursday.",
        "I run a trivia game for my class on Friday afternoons.",
        "I organise a quiz night to raise money for our sports club.",
        "I host a trivia segment on a local radio show.",
    ),
    function_names=("quiz_score", "score_sheet", "score_answers", "total_points", "mark_quiz"),
    arguments={"answers": ("answers", "responses", "submitted"), "key": ("key", "answer_key", "correct_answers")},
    request=(
        "Teams hand in an answer sheet and I want to score it. @answers is their list of answers, with an "
        "empty string for a skipped question, and @key is the list of correct answers in the same order. "
        "Capital letters don't matter. Right and wrong answers score differently, skips score nothing, and "
        "right answers in a row earn a bonus. Return the total points."
    ),
    template="""\
def @fn(@answers, @key):
    total = 0
    streak = 0
    for given, right in zip(@answers, @key):
        if given == '':
            streak = 0
        elif given.lower() == right.lower():
            total += ${correct_points}
            streak += 1
            if streak == ${streak_length}:
                total += ${streak_bonus}
                streak = 0
        else:
            total -= ${wrong_penalty}
            streak = 0
    return total
""",
    params=(
        Param("correct_points", "points for a right answer", "A right answer is worth {v} points.", (2, 3, 5), 1),
        Param("wrong_penalty", "penalty for a wrong answer", "A wrong answer costs {v} points.", (0.5, 1, 2), 0),
        Param(
            "streak_length",
            "length of a streak",
            "Every {v} right answers in a row make a streak; the count starts again after each streak and after "
            "any wrong or skipped answer.",
            (2, 4, 5),
            3,
        ),
        Param("streak_bonus", "bonus for a streak", "Each streak earns {v} bonus points.", (2, 3, 5), 1),
    ),
    make_args=_quiz_args,
)


# --- sales pay: returning a dict of several computed amounts ---------------------------------


def _commission_args(rng: random.Random) -> tuple:
    def sale() -> int:
        return rng.randint(20, 600) if rng.random() < 0.4 else rng.randrange(1000, 12000, 50)

    return ([sale() for _ in range(rng.randint(2, 10))],)


SALES_COMMISSION = Family(
    name="sales_commission",
    domain="sales pay",
    personas=(
        "I manage a small real estate office.",
        "I run a used car lot with three salespeople.",
        "I own a furniture showroom and pay my staff commission.",
        "I run a team that sells solar panels door to door.",
    ),
    function_names=("monthly_commission", "commission_report", "sales_pay", "compute_commission", "payout"),
    arguments={"sales": ("sales", "monthly_sales", "deals")},
    request=(
        "At the end of each month I work out what a salesperson earns on top of their salary. @sales is the "
        "list of their sale amounts in dollars for the month. They earn commission on sales, but tiny sales "
        "don't count, and hitting the monthly target earns a bonus. Return a dict with the keys 'commission', "
        "'bonus' and 'total', amounts rounded to cents."
    ),
    template="""\
def @fn(@sales):
    counted = [amount for amount in @sales if amount >= ${min_sale}]
    commission = round(sum(counted) * ${commission_rate}, 2)
    bonus = ${target_bonus} if sum(@sales) >= ${monthly_target} else 0
    return {'commission': commission, 'bonus': bonus, 'total': round(commission + bonus, 2)}
""",
    params=(
        Param(
            "commission_rate",
            "commission rate",
            "Commission is {v:.0%} of each sale that counts.",
            (0.03, 0.04, 0.06, 0.08),
            0.05,
        ),
        Param(
            "min_sale",
            "smallest sale that earns commission",
            "Sales below {v} dollars earn no commission.",
            (100, 200, 500),
            0,
        ),
        Param(
            "monthly_target",
            "monthly sales target",
            "The target is met when all the month's sales together, small ones included, reach {v} dollars.",
            (20000, 25000, 40000, 50000),
            30000,
        ),
        Param(
            "target_bonus",
            "bonus for meeting the target",
            "Meeting the target earns a bonus of {v} dollars.",
            (250, 750, 1000),
            500,
        ),
    ),
    make_args=_commission_args,
)


# --- flat hunting: filtering dicts, sorting, slicing -----------------------------------------


def _listing(rng: random.Random, number: int) -> dict:
    # Each attribute is often comfortably acceptable, so that strict searches still find a few places.
    comfortable = [rng.random() < 0.7 for _ in range(3)]
    return {
        "id": f"L{number}",
        "rent": rng.randrange(500, 900, 50) if comfortable[0] else rng.randrange(600, 2000, 50),
        "bedrooms": rng.randint(3, 4) if comfortable[1] else rng.randint(1, 4),
        "distance_km": round(rng.uniform(0.3, 2.0) if comfortable[2] else rng.uniform(0.5, 12.0), 1),
    }


def _listing_args(rng: random.Random) -> tuple:
    return ([_listing(rng, number) for number in rng.sample(range(1, 60), rng.randint(4, 9))],)


FLAT_SHORTLIST = Family(
    name="flat_shortlist",
    domain="flat hunting",
    personas=(
        "I'm a graduate student looking for a flat near campus.",
        "I'm a nurse moving to a new city for a hospital job.",
        "We're a family with a dog, hunting for a rental.",
        "I'm helping my younger brother find his first apartment.",
    ),
    function_names=("shortlist", "matching_flats", "pick_listings", "filter_listings", "best_listings"),
    arguments={"listings": ("listings", "flats", "offers")},
    request=(
        "I'm going through rental listings and want a shortlist. @listings is a list of dicts with the keys "
        "'id', 'rent', 'bedrooms' and 'distance_km' (how far it is from where I need to be). Keep only the "
        "ones that fit my budget, have enough bedrooms and are close enough, cheapest first (ties by id), and "
        "only as many as I have time to visit. Return their ids."
    ),
    template="""\
def @fn(@listings):
    fitting = [
        listing for listing in @listings
        if listing['rent'] <= ${max_rent}
        and listing['bedrooms'] >= ${min_bedrooms}
        and listing['distance_km'] <= ${max_distance_km}
    ]
    fitting.sort(key=lambda listing: (listing['rent'], listing['id']))
    return [listing['id'] for listing in fitting[:${max_results}]]
""",
    params=(
        Param(
            "max_rent",
            "monthly budget",
            "The rent can be at most {v} dollars a month.",
            (900, 1100, 1400, 1600),
            1200,
        ),
        Param("min_bedrooms", "number of bedrooms needed", "I need at least {v} bedrooms.", (2, 3), 1),
        Param("max_distance_km", "maximum distance", "It has to be at most {v} km away.", (2, 3, 5, 8), 10),
        Param("max_results", "number of places to visit", "I only have time to visit {v} places.", (2, 3, 4), 5),
    ),
    make_args=_listing_args,
)


# --- shop returns: date arithmetic with a seasonal extension ---------------------------------


def _return_args(rng: random.Random) -> tuple:
    month = 12 if rng.random() < 0.35 else rng.randint(1, 11)
    bought = date(rng.choice((2023, 2024)), month, rng.randint(1, 28))
    returned = bought + timedelta(days=rng.randint(0, 95))
    category = "electronics" if rng.random() < 0.4 else rng.choice(("clothing", "toys", "books"))
    return bought.isoformat(), returned.isoformat(), category


RETURN_ALLOWED = Family(
    name="return_allowed",
    domain="shop returns",
    personas=(
        "I run a small electronics and gadget shop.",
        "I manage customer service for an online clothing store.",
        "I own a toy shop that gets a lot of returns after the holidays.",
        "I run a bookshop that also sells e-readers.",
    ),
    function_names=("can_return", "return_allowed", "accept_return", "eligible_for_return", "is_returnable"),
    arguments={
        "purchase_date": ("purchase_date", "bought_on", "sale_date"),
        "return_date": ("return_date", "returned_on", "today"),
        "category": ("category", "department", "item_kind"),
    },
    request=(
        "Customers bring things back and I want to know whether to accept the return. @purchase_date and "
        "@return_date are 'YYYY-MM-DD' strings and @category is the kind of item, such as 'electronics', "
        "'clothing' or 'toys'. Electronics have a shorter return window than everything else, and things "
        "bought in December get extra time. Return True or False."
    ),
    template="""\
def @fn(@purchase_date, @return_date, @category):
    from datetime import date
    bought = date.fromisoformat(@purchase_date)
    days_kept = (date.fromisoformat(@return_date) - bought).days
    allowed = ${electronics_days} if @category == 'electronics' else ${standard_days}
    if bought.month == 12:
        allowed += ${december_extra_days}
    return 0 <= days_kept <= allowed
""",
    params=(
        Param(
            "standard_days",
            "standard return window",
            "Most items can come back up to {v} days after purchase.",
            (14, 21, 45, 60),
            30,
        ),
        Param(
            "electronics_days",
            "return window for electronics",
            "Electronics can come back up to {v} days after purchase.",
            (5, 7, 10, 21),
            14,
        ),
        Param(
            "december_extra_days",
            "extra time for December purchases",
            "Anything bought in December gets {v} extra days.",
            (10, 15, 20, 31),
            0,
        ),
    ),
    make_args=_return_args,
)


FAMILIES: list[Family] = [
    ORDER_TOTAL,
    LETTER_GRADE,
    LATE_FEE,
    SHIPPING_COST,
    INCOME_TAX,
    LOYALTY_POINTS,
    SPLIT_BILL,
    CONVERT_TEMPERATURES,
    LEAGUE_STANDINGS,
    USERNAME_CHECK,
    PASSWORD_STRENGTH,
    REORDER_PLAN,
    PARKING_FEE,
    FREE_SLOTS,
    IS_OPEN,
    MAKE_SLUG,
    TEAM_CODE,
    TOP_WORDS,
    CURVE_SCORES,
    RATE_LIMIT,
    VOLUME_PRICE,
    MEMBERSHIP_FEE,
    WATER_AMOUNTS,
    CANCELLATION_REFUND,
    QUIZ_SCORE,
    SALES_COMMISSION,
    FLAT_SHORTLIST,
    RETURN_ALLOWED,
]

FAMILIES_BY_NAME: dict[str, Family] = {family.name: family for family in FAMILIES}
