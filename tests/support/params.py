"""Parameters for tests: the project's own params.yaml, with a test's overrides on top.

sandbox_params(workers=2)                  # backend.scoring of params.yaml, 2 workers
project_params().agents["expert"]          # any section, as the stages read it
"""

from __future__ import annotations

from functools import cache

from sweetflow.params import Params, load_params
from tests.support.project import ROOT


@cache
def project_params() -> Params:
    return load_params(ROOT / "params.yaml")


def sandbox_params(**overrides):
    return project_params().backend.scoring.model_copy(update=overrides)


def backend_section(**scoring):
    """The backend's section of params.yaml with `scoring` (sandbox limits, rules) overridden."""
    return project_params().backend.model_copy(update={"scoring": sandbox_params(**scoring)})


def episode_params(**overrides):
    return project_params().episodes.model_copy(update=overrides)


def endpoint_params(**values):
    """An endpoint section: the values a test gives, the retry and timeout knobs of a quick test."""
    from sweetflow.core.params import EndpointParams

    return EndpointParams(
        **{
            "base_url": "http://127.0.0.1:8000/v1",
            "model": "default",
            "api_key_env": "OPENAI_API_KEY",
            "timeout_s": 30.0,
            "max_retries": 2,
            "concurrency": 4,
            **values,
        }
    )


def render_params(**overrides):
    """The renderer's section, with the Tailwind copy's absolute path (tests run from anywhere)."""
    from tests.support.browser import TAILWIND

    return project_params().frontend.scoring.render.model_copy(update={"tailwind_css": TAILWIND, **overrides})


def similarity_params(**overrides):
    return project_params().frontend.scoring.similarity.model_copy(update=overrides)


def transformers_agent(checkpoint, **overrides):
    """The base policy's agent section (`agents.base`), reading `checkpoint`."""
    return project_params().agents["base"].model_copy(update={"checkpoint": str(checkpoint), **overrides})


def openai_agent(endpoint, **overrides):
    from sweetflow.core.params import OpenAIAgentParams

    return OpenAIAgentParams(
        **{
            "backend": "openai",
            "endpoint": endpoint,
            "temperature": 1.0,
            "top_p": 1.0,
            "max_new_tokens": 64,
            **overrides,
        }
    )


def training_params(**overrides):
    return project_params().training.model_copy(update=overrides)


def model_params(**overrides):
    """The backend's base-model section (`backend.model`)."""
    return project_params().backend.model.model_copy(update=overrides)


def params_with(changes: dict) -> Params:
    """The project's params.yaml with `changes` merged in, validated as a stage validates it."""
    import yaml

    from tests.support.project import merge

    return Params.model_validate(merge(yaml.safe_load((ROOT / "params.yaml").read_text()), changes))
