"""How the report shows backend results: tests passed and success, the failure breakdown, and on the
site each dialogue's hidden facts (told or not), its diagnosis and each test's actual value. Read
from the recorded episodes: nothing is run."""

from __future__ import annotations

from sweetflow.backend.diagnosis import failure_kind, told
from sweetflow.backend.verdict import passes_test
from sweetflow.dialogue import HUMAN
from sweetflow.domain_report import BehaviourColumn, DomainReport


class BackendReport(DomainReport):
    name = "backend"
    title = "Backend programming"
    headline = ("tests_passed", "success_rate")
    columns = ("tests passed", "success")
    goal_metric = "success_rate"
    description = "% of hidden tests passed and % of tasks solved (all tests passed)"
    paper = {
        "zero_shot": (34.2, 22.4),
        "rft": (40.9, 28.2),
        "mtdpo": (48.0, 34.4),
        "sweet": (56.8, 40.4),
        "sweet_no_info": (44.0, 31.2),
    }
    gpt4o = (54.6, 40.4)
    episode_column = "success"
    episode_measure = "success"
    behaviour_note = (
        "Failures, as shares of all test episodes: answered with a hidden fact never told, every "
        "fact told but the answer still wrong, other."
    )
    behaviour_columns = (
        BehaviourColumn("moved_from_base", "moved from base (%)"),
        BehaviourColumn("failed_facts_missing", "facts missing (%)"),
        BehaviourColumn("failed_miscopied", "miscopied (%)"),
        BehaviourColumn("failed_other", "other failures (%)"),
    )

    def completed_outcome(self, reward: float, success: bool | None) -> str:
        return "all tests passed" if success else "some tests passed" if reward > 0 else "no test passed"

    def task_details(self, task: dict, pictures: object | None) -> dict:
        """The hidden facts and the tests (call, expected output)."""
        return {
            "facts": [{"topic": f["topic"], "fact": f["fact"]} for f in task.get("facts") or []],
            "tests": [[call, exp] for call, exp in zip(task.get("test_cases") or [], task.get("expected") or [])],
        }

    def episode_details(self, task: dict, row: dict, turns: list[dict], pictures: object | None) -> dict:
        """Which hidden facts the human told, why the episode failed, and each test's actual value."""
        replies = [t["content"] for t in row["dialogue"] if t["role"] == HUMAN]
        details = {"told": sorted(told(task, replies)) if task.get("facts") is not None else []}
        completed = row["failure"] is None
        details["diagnosis"] = failure_kind(task, row["dialogue"], bool(row["success"])) if completed else None
        outputs = row.get("test_outputs")
        if outputs is not None:  # episodes recorded before test outputs were kept have none
            details["outputs"] = outputs
            details["passed"] = [passes_test(e, o) for e, o in zip(task.get("expected") or [], outputs)]
        return details


REPORT = BackendReport()
