"""Buying and returning in a shop: a till's discounts, loyalty points, tiered prices, the returns window."""

from __future__ import annotations

import random
from datetime import date, timedelta

from sweetflow.backend.tasks.family import Family, Param

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
