"""Candidate design actions labelled by the reward itself: a page is good when it renders closer to
the target than the page before it (at the first turn, the page made from the description alone)."""

from __future__ import annotations

import polars as pl

from sweetflow.dialogue import AGENT, HUMAN
from sweetflow.domain import Score
from sweetflow.frontend.agents import answer_message, show_message
from sweetflow.frontend.diagnosis import label_candidates, previous_page
from sweetflow.frontend.outline import read_page
from sweetflow.frontend.plain import page_from_description
from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.scoring import score_pages
from sweetflow.frontend.similarity import Similarity
from sweetflow.frontend.tasks import generate_frontend_tasks
from tests.support.params import render_params, similarity_params


def test_candidates_are_good_when_their_page_gets_closer_to_the_target():
    _, (task,) = generate_frontend_tasks(0, 1, seed=3)
    target = read_page(task["ground_truth"])
    plain = page_from_description(task["problem_description"])
    similarity = Similarity(similarity_params())
    with RenderPool(render_params(pages=2)) as pool:
        task["target_png"] = pool.render(task["ground_truth"])
        (reference,) = score_pages(
            [answer_message(plain)], [task["target_png"]], [task["ground_truth"]], pool, similarity
        )
        task["reference_similarity"] = reference.similarity

        def score(tasks: list[dict], answers: list[str]) -> list[Score]:
            return [
                Score(r.similarity, None, r.status)
                for r in score_pages(
                    answers, [t["target_png"] for t in tasks], [t["ground_truth"] for t in tasks], pool, similarity
                )
            ]

        # The dialogue: the agent showed the target itself at its first turn and heard back.
        dialogue = [{"role": AGENT, "content": show_message(target)}, {"role": HUMAN, "content": "That's it."}]
        trajectories = pl.DataFrame({"task_id": [task["task_id"]], "sample": [0], "dialogue": [dialogue]})
        first = [show_message(target), "Which colours do you like?", answer_message(plain), "<html><body>"]
        later = [answer_message(plain), answer_message(target)]
        candidates = pl.DataFrame(
            {
                "state_id": ["s0"] * len(first) + ["s2"] * len(later),
                "task_id": [task["task_id"]] * (len(first) + len(later)),
                "sample": [0] * (len(first) + len(later)),
                "position": [0] * len(first) + [2] * len(later),
                "candidate": list(range(len(first))) + list(range(len(later))),
                "message": first + later,
            },
            schema_overrides={"candidate": pl.Int32},
        )
        labels = label_candidates(candidates, trajectories, {task["task_id"]: task}, score)
    assert task["reference_similarity"] < 1.0
    assert labels["kind"].to_list() == [
        "closer",  # the target beats the page made from the description
        "no_page",  # a question shows no page
        "not_closer",  # the description's own page only ties the reference
        "not_closer",  # an empty page renders, far from the target
        "not_closer",  # after the target was shown, the plain page is a step back
        "not_closer",  # and the target again is no closer than itself
    ]
    assert labels["good"].to_list() == [True, False, False, False, False, False]
    assert labels.schema["candidate"] == pl.Int32


def test_previous_page_is_the_last_page_shown_before_the_state():
    dialogue = [
        {"role": AGENT, "content": "<html>one</html>"},
        {"role": HUMAN, "content": "<html>not mine</html>"},
        {"role": AGENT, "content": "A question?"},
        {"role": HUMAN, "content": "No."},
    ]
    assert previous_page(dialogue, 0) is None
    assert previous_page(dialogue, 2) == previous_page(dialogue, 4) == "<html>one</html>"
