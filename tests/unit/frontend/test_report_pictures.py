"""The site's pictures of design dialogues (sweetflow/frontend/report.py), on real headless Chromium: a
method's shown episodes rendered in one batch give the pictures and similarities that rendering each
episode on its own gives, and a page shown twice is rendered once."""

from __future__ import annotations

from sweetflow.frontend.render import RenderPool
from sweetflow.frontend.report import REPORT, Pictures
from tests.support.params import project_params


def page(colour: str, words: str) -> str:
    return f'<html><body style="background:{colour}"><h1>{words}</h1></body></html>'


def episode(task_id: str, pages: list[str], answer: str) -> tuple[dict, dict, list[dict]]:
    turns = []
    for html in pages:
        turns += [{"role": "agent", "text": f"Here is my page:\n{html}"}, {"role": "human", "text": "Bigger title."}]
    row = {"task_id": task_id, "answer": answer}
    return {"task_id": task_id}, row, turns


def test_a_batch_of_episodes_is_pictured_as_episode_by_episode(tmp_path):
    params = project_params()
    with RenderPool(params.frontend.scoring.render) as pool:
        target = pool.render(page("#dbeafe", "Target"))
    blue, red, white = page("#dbeafe", "Draft"), page("#fee2e2", "Draft"), page("#ffffff", "Other")
    # The answer repeats the last turn's page, and a page repeats across the two episodes.
    episodes = [episode("a", [white, blue], blue), episode("b", [red, white], "no page at all")]
    for task, _, _ in episodes:
        task["target_png"] = target

    def details(batch: bool) -> tuple[list[dict], dict]:
        with Pictures(tmp_path / ("batch" if batch else "each"), params.frontend.scoring) as pictures:
            if batch:
                REPORT.prepare(episodes, pictures)
            shown = [REPORT.episode_details(task, row, turns, pictures) for task, row, turns in episodes]
            return shown, dict(pictures._pool.stats)

    batched, batch_stats = details(batch=True)
    each, each_stats = details(batch=False)
    assert batched == each
    assert batch_stats["rendered"] == each_stats["rendered"] == 3  # white, blue and red, once each
    first, second = batched
    assert (first["final_page"], first["final_similarity"]) == (
        first["turns"][2]["page"],
        first["turns"][2]["similarity"],
    )
    assert second["final_page"] is None and second["final_similarity"] is None
    assert second["turns"][2]["page"] == first["turns"][0]["page"]  # the white page, one picture
