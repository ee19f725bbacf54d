"""Fees and charges: library fines, parcels, car parks, gym membership, holiday cancellations."""

from __future__ import annotations

import random

from sweetflow.backend.tasks.family import Family, Param

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
