"""Grades and scores: a grading scale, curving an exam, a quiz night, a league table."""

from __future__ import annotations

import random

from sweetflow.backend.tasks.family import Family, Param

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
