"""A thin client for OpenAI-compatible chat endpoints (vLLM, `transformers serve`, hosted APIs).

The API key is read from the environment variable the params name, at call time, and is never
stored in an artifact: error texts are redacted (`sweetflow.core.secrets`). Transient faults (timeouts,
429, 5xx, dropped connections) are retried with exponential backoff by the `openai` client itself;
what still fails raises `EndpointError`, and a prompt the server refuses as longer than its model's
context `PromptTooLong`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from sweetflow.core.artifacts import record_answer
from sweetflow.core.params import EndpointParams
from sweetflow.core.secrets import redact, remember


class EndpointError(RuntimeError):
    """A request that failed after every retry; the message says why."""


class PromptTooLong(EndpointError):
    """The server refused the prompt: it leaves no room for an answer in the model's context."""


# How the servers word that refusal (a 400) in its text: OpenAI's API and vLLM ("This model's maximum context
# length is N tokens"), `transformers serve` 5.x ("... takes at most N, prompt and answer"), and OpenAI's code for
# it, `context_length_exceeded`, where a server writes that into the text.
TOO_LONG = re.compile(r"context_length_exceeded|maximum context length|takes at most \d+", re.IGNORECASE)


@dataclass
class Completion:
    text: str
    logprob_sum: float | None = None
    logprob_mean: float | None = None
    n_tokens: int | None = None


class ChatClient:
    def __init__(self, params: EndpointParams, record: bool = True):
        """`record`: note what answered in the stage's manifest (sweetflow.core.artifacts.record_answer); a
        server the stage started itself is recorded by the checkpoint it serves instead."""
        import openai  # here, not at the top: its import costs every stage a second, and most never call out

        self.params = params
        self.record = record
        self._api_error = openai.APIError
        # Local servers (vLLM, transformers serve) accept any key; hosted APIs need the real one.
        key = os.environ.get(params.api_key_env) or "no-key"
        remember(key)
        self._client = openai.OpenAI(
            base_url=params.base_url, api_key=key, timeout=params.timeout_s, max_retries=params.max_retries
        )

    def complete(
        self,
        messages: list[dict],
        temperature: float,
        max_tokens: int | None = None,
        top_p: float | None = None,
        logprobs: bool = False,
        seed: int | None = None,
    ) -> Completion:
        extra = {k: v for k, v in (("max_tokens", max_tokens), ("top_p", top_p), ("seed", seed)) if v is not None}
        try:
            response = self._client.chat.completions.create(
                model=self.params.model, messages=messages, temperature=temperature, logprobs=logprobs or None, **extra
            )
        except self._api_error as e:
            # The error text may echo the request (an Authorization header): redacted before it is cut,
            # so that no part of a key survives the cut.
            reason = redact(_reason(e))
            too_long = getattr(e, "status_code", None) == 400 and TOO_LONG.search(reason)
            raise (PromptTooLong if too_long else EndpointError)(reason[:300]) from None
        if self.record:
            record_answer(self.params.base_url, response.model, getattr(response, "system_fingerprint", None))
        if not response.choices:
            raise EndpointError("the endpoint returned no choices")
        choice = response.choices[0]
        tokens = (choice.logprobs.content or []) if choice.logprobs else []
        if tokens:
            total = sum(t.logprob for t in tokens)
            return Completion(choice.message.content or "", total, total / len(tokens), len(tokens))
        # No log-probs (`transformers serve` ignores the request for them): the token count, if reported.
        n_tokens = response.usage.completion_tokens if response.usage else None
        return Completion(choice.message.content or "", n_tokens=n_tokens)


def _reason(error: Exception) -> str:
    """The error's text with the server's own reason: `openai` writes only an `{"error": {"message": ...}}` body into
    it, and FastAPI servers (`transformers serve`) answer `{"detail": ...}` or `{"error": "..."}`."""
    text = f"{type(error).__name__}: {error}"
    body = getattr(error, "body", None)
    said = [body.get(key) for key in ("detail", "error")] if isinstance(body, dict) else []
    return " - ".join([text, *(s for s in said if isinstance(s, str) and s not in text)])
