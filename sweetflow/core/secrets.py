"""Keep secrets out of every text the pipeline stores or prints.

An endpoint's API key lives only in the environment (`EndpointParams.api_key_env`), but error texts
can carry it back: a server that echoes the request's `Authorization` header in its error body puts
`Bearer <key>` into the exception, and from there into a trajectory's `failure`, the checkpoint
file and the stage's error message. `redact` removes every key the process has read from the
environment (`remember`) and anything shaped like a credential, before such text is written.
"""

from __future__ import annotations

import re

MASK = "[redacted]"
_known: set[str] = set()
# Credential shapes, whatever their value: an Authorization header or Bearer token, and API keys of
# the form most providers use (sk-…, hf_…).
_SHAPES = re.compile(
    r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(?:bearer\s+)?[^\s\"',}]+"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]+"
    r"|\b(?:sk|hf)[-_][A-Za-z0-9_-]{8,}"
)


def remember(secret: str | None) -> None:
    """A value read from the environment that must never be written (short values are not secrets)."""
    if secret and len(secret) >= 6:
        _known.add(secret)


def redact(text: str) -> str:
    for secret in sorted(_known, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _SHAPES.sub(lambda m: (m.group(1) or "") + MASK, text)
