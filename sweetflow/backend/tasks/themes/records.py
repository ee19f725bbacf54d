"""Lists of records: temperature logs, stock reorders, watering plans, flat listings."""

from __future__ import annotations

import random

from sweetflow.backend.tasks.family import Family, Param

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
