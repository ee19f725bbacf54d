"""Labels of backend episodes and actions, on hand-built dialogues with known answers."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sweetflow.backend.diagnosis import failure_breakdown, failure_kind, label_action, label_candidates, settle
from sweetflow.backend.simulators import ScriptedHuman
from sweetflow.dialogue import AGENT, HUMAN, Message
from sweetflow.domain import Score

TASK = {
    "task_id": "fee-1",
    "facts": [
        {"topic": "late fee", "fact": "The late fee is 7 dollars per day."},
        {"topic": "grace period", "fact": "The grace period is 3 days."},
    ],
}
FEE, GRACE = (f["fact"] for f in TASK["facts"])
HUMAN_SIM = ScriptedHuman()


def turns(*pairs):
    return [{"role": role, "content": text} for role, text in pairs]


def test_a_failure_is_facts_missing_until_every_fact_was_told():
    one = turns((AGENT, "What is the late fee?"), (HUMAN, FEE), (AGENT, "I WANT TO ANSWER: def f(): pass"))
    both = turns(
        (AGENT, "What is the late fee and the grace period?"),
        (HUMAN, f"{FEE} {GRACE}"),
        (AGENT, "I WANT TO ANSWER: def f(): pass"),
    )
    assert failure_kind(TASK, one, success=False) == "facts_missing"
    assert failure_kind(TASK, both, success=False) == "miscopied"
    assert failure_kind(TASK, both, success=True) is None
    assert failure_kind({**TASK, "facts": []}, one, success=False) == "other"


def test_the_breakdown_is_a_share_of_all_episodes():
    one = turns((AGENT, "What is the late fee?"), (HUMAN, FEE))
    both = turns((AGENT, "Late fee? Grace period?"), (HUMAN, f"{FEE} {GRACE}"))
    rows = [("fee-1", one, False), ("fee-1", both, False), ("fee-1", both, True), ("fee-1", one, True)]
    assert failure_breakdown({"fee-1": TASK}, rows) == {
        "failed_facts_missing": 0.25,
        "failed_miscopied": 0.25,
        "failed_other": 0.0,
    }


def test_a_question_is_good_only_when_it_gets_a_new_fact_told():
    start = [Message(AGENT, "Hi, what is the late fee?"), Message(HUMAN, FEE)]
    assert label_action(TASK, start, "What is the grace period?", HUMAN_SIM) == ("new_fact", None)
    assert label_action(TASK, start, "What is the late fee again?", HUMAN_SIM) == ("no_new_fact", None)
    assert label_action(TASK, start, "Anything else I should know?", HUMAN_SIM) == ("no_new_fact", None)


def test_an_answer_is_premature_or_miscopied_until_its_score_settles_it():
    start = [Message(AGENT, "What is the late fee?"), Message(HUMAN, FEE)]
    kind, answer = label_action(TASK, start, "I WANT TO ANSWER: def f(): return 7", HUMAN_SIM)
    assert (kind, answer) == ("premature", "def f(): return 7")
    told_all = [*start, Message(AGENT, "And the grace period?"), Message(HUMAN, GRACE)]
    assert label_action(TASK, told_all, "I WANT TO ANSWER: def f(): return 8", HUMAN_SIM)[0] == "miscopied"
    assert settle("miscopied", success=True) == "correct" and settle("premature", success=True) == "correct"
    assert settle("premature", success=False) == "premature"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["ask_fee", "ask_grace", "vague", "answer_ok", "answer_bad"]), min_size=1, max_size=12))
def test_candidates_are_labelled_in_order_and_only_answers_are_scored(actions):
    messages = {
        "ask_fee": "What is the late fee?",
        "ask_grace": "How long is the grace period?",
        "vague": "Anything else?",
        "answer_ok": "I WANT TO ANSWER: ok",
        "answer_bad": "I WANT TO ANSWER: bad",
    }
    rollout = pl.DataFrame(
        {
            "task_id": ["fee-1"],
            "sample": [0],
            "dialogue": [turns((AGENT, "What is the late fee?"), (HUMAN, FEE), (AGENT, "x"))],
        }
    )
    candidates = pl.DataFrame(
        {
            "state_id": ["s"] * len(actions),
            "task_id": ["fee-1"] * len(actions),
            "sample": [0] * len(actions),
            "position": [2] * len(actions),
            "candidate": list(range(len(actions))),
            "message": [messages[a] for a in actions],
        },
        schema_overrides={"candidate": pl.Int32},
    )
    scored = []

    def score(tasks, answers):
        scored.extend(answers)
        return [Score(1.0 if a == "ok" else 0.0, a == "ok", "ok") for a in answers]

    labels = label_candidates(candidates, rollout, {"fee-1": TASK}, HUMAN_SIM, score)
    expected = {
        "ask_fee": "no_new_fact",
        "ask_grace": "new_fact",
        "vague": "no_new_fact",
        "answer_ok": "correct",
        "answer_bad": "premature",
    }
    assert labels["kind"].to_list() == [expected[a] for a in actions]
    assert labels["good"].to_list() == [expected[a] in ("new_fact", "correct") for a in actions]
    assert scored == [messages[a].split(": ", 1)[1] for a in actions if a.startswith("answer")]
