"""The scripted simulated human: precise questions get facts, nothing else does."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweetflow.backend.simulators import (
    DONT_KNOW,
    ScriptedHuman,
    changed_replies,
    content_words,
    human_chat,
    questions_in,
)
from sweetflow.backend.tasks.procedural import generate_tasks
from sweetflow.dialogue import AGENT, HUMAN, Message

_, TASKS = generate_tasks(0, 56, seed=11)


def ask(task: dict, text: str, human: ScriptedHuman | None = None) -> str:
    return (human or ScriptedHuman()).reply(task, [Message(AGENT, text)])


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t["family"])
def test_each_topic_asked_gets_exactly_its_fact(task):
    for fact in task["facts"]:
        assert ask(task, f"What is the {fact['topic']}?") == fact["fact"][:400]


@pytest.mark.parametrize("task", TASKS[:28], ids=lambda t: t["family"])
def test_two_topics_in_one_sentence_get_both_facts(task):
    a, b = task["facts"][:2]
    reply = ask(task, f"Two questions: what is the {a['topic']}, and what is the {b['topic']}?")
    assert reply == f"{a['fact']} {b['fact']}"[:400]


@pytest.mark.parametrize("vague", ["Anything else I should know?", "Can you tell me more?", "Hello!", "Thanks."])
def test_vague_messages_get_nothing_volunteered(vague):
    for task in TASKS[:28]:
        assert ask(task, vague) == DONT_KNOW


@given(st.integers(min_value=3, max_value=6))
def test_no_more_than_max_facts_per_reply(n):
    task = next(t for t in TASKS if len(t["facts"]) >= 3)
    message = " ".join(f"What is the {f['topic']}?" for f in task["facts"])
    human = ScriptedHuman(max_facts=2, max_reply_chars=n * 100)
    reply = ask(task, message, human)
    assert sum(f["fact"] in reply for f in task["facts"]) == 2
    assert len(reply) <= n * 100


def test_replies_are_cut_at_the_limit():
    task = TASKS[0]
    assert len(ask(task, f"What is the {task['facts'][0]['topic']}?", ScriptedHuman(max_reply_chars=10))) == 10


def test_a_general_word_gives_way_to_the_more_specific_topic():
    task = {
        "facts": [
            {"topic": "price", "fact": "Base price is 5."},
            {"topic": "price per extra kilo", "fact": "Each extra kilo costs 2."},
        ]
    }
    assert ask(task, "What is the price per extra kilo?") == "Each extra kilo costs 2."
    assert ask(task, "What is the price?") == "Base price is 5."


def test_paraphrase_with_synonyms_and_plurals_matches():
    assert content_words("What's the cost for extra kilos?") >= content_words("price per extra kilo")
    assert "A" in content_words("cutoff for an A") and "a" not in content_words("a cutoff")


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        # a real model's own phrasings (bench/data/free_phrasing.json) and their mirror images
        ("What is the smallest believable reading?", "lowest believable reading"),
        ("What is the largest believable reading?", "highest believable reading"),
        ("What is the highest fee?", "maximum fee"),
        ("What is the monthly classes covered by the base fee?", "classes included in the base fee"),
        ("Which weight does the base price cover?", "weight covered by the base price"),
    ],
)
def test_a_synonym_names_the_topic(question, topic):
    assert content_words(question) >= content_words(topic)


def test_synonyms_do_not_make_vague_questions_name_a_topic():
    for task in TASKS[:28]:
        assert ask(task, "What is the smallest thing that is covered?") == DONT_KNOW


@given(st.sampled_from(TASKS), st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=5), st.data())
def test_a_dialogue_the_human_answered_replays_unchanged_until_a_reply_is_edited(task, picks, data):
    human = ScriptedHuman()
    dialogue = []
    for i in picks:  # questions for facts, and one that names none
        question = f"What is the {task['facts'][i]['topic']}?" if i < len(task["facts"]) else "Anything else?"
        dialogue.append({"role": AGENT, "content": question})
        messages = [Message(t["role"], t["content"]) for t in dialogue]
        dialogue.append({"role": HUMAN, "content": human.reply(task, messages)})
    assert changed_replies(human, task, dialogue) == []
    edited = data.draw(st.sampled_from(range(1, len(dialogue), 2)))
    recorded = dialogue[edited]["content"]
    dialogue[edited] = {"role": HUMAN, "content": recorded + " (edited)"}
    assert changed_replies(human, task, dialogue) == [(edited, recorded + " (edited)", recorded)]


def test_questions_are_split_on_question_marks():
    assert questions_in("Hi. What is X? And Y?") == ["What is X?", "And Y?"]
    assert questions_in("Tell me the rate") == ["Tell me the rate"]


def test_openai_human_sees_facts_and_dialogue_from_its_side():
    task = TASKS[0]
    chat = human_chat(task, [Message(AGENT, "What?"), Message(HUMAN, "That."), Message(AGENT, "Ok?")])
    assert chat[0]["role"] == "system" and task["facts"][0]["fact"] in chat[0]["content"]
    assert [m["role"] for m in chat[1:]] == ["user", "assistant", "user"]
