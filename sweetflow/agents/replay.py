"""Replaying a recorded dialogue before a policy takes over (the critic check plays candidates out)."""

from __future__ import annotations

from sweetflow.dialogue import Agent, AgentTurn, EpisodeView


class ReplayAgent:
    """Says a fixed script of agent messages per episode (keyed by task id), then lets `policy` talk."""

    def __init__(self, scripts: dict[str, list[str]], policy: Agent):
        self.scripts, self.policy = scripts, policy

    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        results: list[AgentTurn | Exception | None] = [None] * len(views)
        free = []
        for i, view in enumerate(views):
            script = self.scripts[view.task_id]
            if view.turn < len(script):
                text = script[view.turn]
                results[i] = AgentTurn(prompt="", raw=text, message=text)
            else:
                free.append(i)
        if free:
            for i, turn in zip(free, self.policy.act([views[i] for i in free])):
                results[i] = turn
        return results
