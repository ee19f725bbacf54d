"""The `openai` agent backend: a policy behind an OpenAI-compatible endpoint (vLLM, `transformers
serve`, a hosted API), one request per live episode, `concurrency` in flight at once."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from sweetflow.core.params import OpenAIAgentParams
from sweetflow.dialogue import AgentTurn, ContextOverflow, EpisodeView
from sweetflow.endpoint import ChatClient, EndpointError, PromptTooLong
from sweetflow.views import policy_chat


class OpenAIAgent:
    def __init__(self, params: OpenAIAgentParams, record: bool = True):
        self.params = params
        self.client = ChatClient(params.endpoint, record)

    def _one(self, view: EpisodeView) -> AgentTurn | Exception:
        chat = policy_chat(view)
        try:
            completion = self.client.complete(
                chat,
                temperature=self.params.temperature,
                top_p=self.params.top_p,
                max_tokens=self.params.max_new_tokens,
                logprobs=True,
                seed=view.seed * 100 + view.turn,
            )
        except PromptTooLong as e:  # the dialogue fills the model's context: it ends there, as with a local model
            return ContextOverflow(str(e))
        except EndpointError as e:  # the engine records the episode as failed, with this reason
            return e
        return AgentTurn(
            prompt=json.dumps(chat),
            raw=completion.text,
            message=completion.text.strip(),
            logprob_sum=completion.logprob_sum,
            logprob_mean=completion.logprob_mean,
            n_tokens=completion.n_tokens,
        )

    def act(self, views: list[EpisodeView]) -> list[AgentTurn | Exception]:
        with ThreadPoolExecutor(self.params.endpoint.concurrency) as pool:
            return list(pool.map(self._one, views))
