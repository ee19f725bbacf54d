"""Times of day and week: free appointment slots, opening hours."""

from __future__ import annotations

import random

from sweetflow.backend.tasks.family import Family, Param

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
