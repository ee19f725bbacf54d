"""A thin client for OpenAI-compatible chat endpoints (vLLM, `transformers serve`, hosted APIs).

The API key is read from the environment variable the params name, at call time, and is never
stored in an artifact: error texts are redacted (`sweetflow.core.secrets`). Transient faults (timeouts,
429, 5xx, dropped connections) are retried with exponential backoff by the `openai` client itself;
what still fails raises `EndpointError`, and a prompt the server refuses as longer than its model's
context `PromptTooLong`.

A server's reply is data, never trusted: each attempt at a request has a whole deadline, `timeout_s` for
connecting, waiting and reading together (httpx bounds each read alone, so a server that trickles a reply
a byte at a time would otherwise never be cut off); a reply larger than `REPLY_BYTES_PER_TOKEN` bytes for
each token asked (`max_tokens`) plus `REPLY_ENVELOPE_BYTES` is cut off and refused; and a 200 whose body is
not a chat completion (not JSON, an HTML page, a choice without a message) is an `EndpointError` with its
reason, as a refused request is.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2 as httpx  # what `openai` 3.x sends through

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
# A reply's size cap: a chat completion with log-probs carries about 100-200 bytes a token (the token, its bytes,
# its log-prob); 1 KiB a token and 64 KiB besides leave room for any honest server and stop a runaway one (a
# 10 MB reply took an evaluation from 119 MB to 1.35 GB).
REPLY_BYTES_PER_TOKEN = 1024
REPLY_ENVELOPE_BYTES = 64 * 1024


class _Bounded(httpx.BaseTransport):
    """httpx's transport with a deadline on each attempt as a whole and a cap on its reply's size (read from the
    request's own `max_tokens`)."""

    def __init__(self, deadline_s: float):
        self.deadline_s = deadline_s
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        start = time.monotonic()
        response = self.inner.handle_request(request)
        try:
            max_tokens = json.loads(request.content or b"{}").get("max_tokens") or 0
        except (ValueError, AttributeError):
            max_tokens = 0
        cap = REPLY_ENVELOPE_BYTES + REPLY_BYTES_PER_TOKEN * int(max_tokens)
        stream = _BoundedStream(response.stream, start + self.deadline_s, self.deadline_s, cap)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=stream, extensions=response.extensions
        )

    def close(self) -> None:
        self.inner.close()


class _BoundedStream(httpx.SyncByteStream):
    def __init__(self, inner, deadline: float, deadline_s: float, cap: int):
        self.inner, self.deadline, self.deadline_s, self.cap = inner, deadline, deadline_s, cap

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        for chunk in self.inner:
            read += len(chunk)
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout(f"the reply took longer than timeout_s ({self.deadline_s:g} s) in all")
            if read > self.cap:
                raise httpx.ReadError(f"the reply passed {self.cap:,} bytes, the cap for the tokens asked")
            yield chunk

    def close(self) -> None:
        self.inner.close()


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
        bounded = httpx.Client(transport=_Bounded(params.timeout_s), timeout=params.timeout_s)
        self._client = openai.OpenAI(
            base_url=params.base_url,
            api_key=key,
            timeout=params.timeout_s,
            max_retries=params.max_retries,
            http_client=bounded,
        )

    def complete(
        self,
        messages: list[dict],
        temperature: float,
        max_tokens: int,
        top_p: float | None = None,
        logprobs: bool = False,
        seed: int | None = None,
    ) -> Completion:
        extra = {k: v for k, v in (("top_p", top_p), ("seed", seed)) if v is not None}
        try:
            response = self._client.chat.completions.create(
                model=self.params.model,
                messages=messages,
                temperature=temperature,
                max_tokens=max_tokens,
                logprobs=logprobs or None,
                **extra,
            )
        except self._api_error as e:
            # The error text may echo the request (an Authorization header): redacted before it is cut,
            # so that no part of a key survives the cut.
            reason = redact(_reason(e))
            too_long = getattr(e, "status_code", None) == 400 and TOO_LONG.search(reason)
            raise (PromptTooLong if too_long else EndpointError)(reason[:300]) from None
        except ValueError as e:  # a 200 whose body is not JSON (json's error is a ValueError)
            raise EndpointError(redact(f"a malformed reply: not JSON ({e})")[:300]) from None
        choice = _first_choice(response)
        if self.record:
            record_answer(self.params.base_url, response.model, getattr(response, "system_fingerprint", None))
        tokens = (choice.logprobs.content or []) if choice.logprobs else []
        if tokens:
            total = sum(t.logprob for t in tokens)
            return Completion(choice.message.content or "", total, total / len(tokens), len(tokens))
        # No log-probs (`transformers serve` ignores the request for them): the token count, if reported.
        n_tokens = response.usage.completion_tokens if response.usage else None
        return Completion(choice.message.content or "", n_tokens=n_tokens)


def _first_choice(response: object):
    """The reply's first choice, once the reply is seen to be a chat completion with a message: `openai` builds its
    objects from whatever JSON came, unchecked, and hands back a page of another content type as a string."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list):
        shown = redact(str(response))[:120]
        raise EndpointError(f"a malformed reply: not a chat completion ({type(response).__name__}: {shown!r})")
    if not choices:
        raise EndpointError("the endpoint returned no choices")
    message = getattr(choices[0], "message", None)
    if message is None or not isinstance(getattr(message, "content", None), (str, type(None))):
        raise EndpointError("a malformed reply: its choice has no message")
    return choices[0]


def _reason(error: Exception) -> str:
    """The error's text with the server's own reason: `openai` writes only an `{"error": {"message": ...}}` body into
    it, and FastAPI servers (`transformers serve`) answer `{"detail": ...}` or `{"error": "..."}`; and with what
    caused it, where that is ours (a deadline passed, a reply past its cap)."""
    text = f"{type(error).__name__}: {error}"
    body = getattr(error, "body", None)
    said = [body.get(key) for key in ("detail", "error")] if isinstance(body, dict) else []
    # A timeout or a cut-off reply of our own transport (`_Bounded`) is the cause of openai's generic error.
    said.append(str(error.__cause__) if error.__cause__ else None)
    return " - ".join([text, *(s for s in said if isinstance(s, str) and s and s not in text)])
