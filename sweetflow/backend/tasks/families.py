"""The task families the procedural generator draws from, in the order it takes them.

The order is part of the generated tasks: each split shuffles this list with its seed, so a family
added at the end leaves the tasks of the others as they were. Each family is defined in the module of
its theme (`sweetflow.backend.tasks.themes`); what a family is, in `sweetflow.backend.tasks.family`.
"""

from __future__ import annotations

from sweetflow.backend.tasks.family import Family
from sweetflow.backend.tasks.themes.accounts import PASSWORD_STRENGTH, RATE_LIMIT, USERNAME_CHECK
from sweetflow.backend.tasks.themes.fees import (
    CANCELLATION_REFUND,
    LATE_FEE,
    MEMBERSHIP_FEE,
    PARKING_FEE,
    SHIPPING_COST,
)
from sweetflow.backend.tasks.themes.money import INCOME_TAX, SALES_COMMISSION, SPLIT_BILL
from sweetflow.backend.tasks.themes.records import CONVERT_TEMPERATURES, FLAT_SHORTLIST, REORDER_PLAN, WATER_AMOUNTS
from sweetflow.backend.tasks.themes.schedules import FREE_SLOTS, IS_OPEN
from sweetflow.backend.tasks.themes.scores import CURVE_SCORES, LEAGUE_STANDINGS, LETTER_GRADE, QUIZ_SCORE
from sweetflow.backend.tasks.themes.shopping import LOYALTY_POINTS, ORDER_TOTAL, RETURN_ALLOWED, VOLUME_PRICE
from sweetflow.backend.tasks.themes.text import MAKE_SLUG, TEAM_CODE, TOP_WORDS

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
