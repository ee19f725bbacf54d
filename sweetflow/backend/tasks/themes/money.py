"""Pay and bills: income tax in bands, splitting a bill, a salesperson's commission."""

from __future__ import annotations

import random

from sweetflow.backend.tasks.family import Family, Param

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
