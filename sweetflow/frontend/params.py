"""The frontend domain's section of params.yaml (`frontend`): its tasks, its simulated human and how
its pages are rendered and compared, on the bases every domain shares (`sweetflow.core.params`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from sweetflow.core.params import (
    ClipModel,
    ColbenchTasksParams,
    DomainParams,
    EndpointParams,
    ModelParams,
    Section,
    ServedBackend,
)


class RenderParams(Section):
    """Rendering HTML pages to screenshots (frontend tasks): headless Chromium, fully offline."""

    pages: int = Field(ge=1, description="Browser pages rendering at once; one browser serves them all.")
    viewport_width: int = Field(ge=64, description="Viewport width in CSS pixels; every screenshot has this width.")
    viewport_height: int = Field(
        ge=64, description="Viewport height in CSS pixels; the least screenshot height (pages are shot full length)."
    )
    max_height: int = Field(
        ge=64, description="Full-page screenshots are cut to this height, so that a huge page cannot exhaust memory."
    )
    timeout_s: float = Field(
        gt=0,
        description="Time limit of one page (load and screenshot); a page over it, or whose renderer crashes, "
        "has no screenshot.",
    )
    js_heap_mb: int = Field(
        ge=16,
        description="V8 heap limit of a renderer, MiB: a page that allocates without bound crashes its "
        "renderer quickly.",
    )
    tailwind_css: Path = Field(
        description="Local copy of tailwindcss@2.2.19 dist/tailwind.min.css (scripts/setup.sh fetches it), served for "
        "the CDN link of every page."
    )
    tailwind_subset: bool = Field(
        description="Serve each page only the Tailwind rules its markup can use, picked as Tailwind's purge picks them "
        "(the same pixels; rendering twice as fast); false serves the whole stylesheet."
    )
    chromium: Path = Field(description="The Chromium executable (Debian's package).")


class SimilarityParams(Section):
    """The frontend reward: visual similarity of an answer's screenshot to the target's. A method's win
    rate is the share of tasks where its page is closer to the target than the page made from the
    description alone (the `no_ask` designer's; the paper's reference is GPT-4o's page); a tie is half a win."""

    metric: Literal["pixels", "clip"] = Field(
        description="'pixels': an offline perceptual similarity needing no weights (not comparable with the paper's "
        "numbers); 'clip': cosine similarity of CLIP image embeddings (paper: ViT-B/32), from `clip_checkpoint`."
    )
    clip_checkpoint: ClipModel | None = Field(
        description="Metric 'clip': directory of a local CLIP checkpoint (model and image processor) under "
        "models/clip/; "
        "nothing is downloaded."
    )
    batch_size: int = Field(ge=1, description="Metric 'clip': images embedded per forward pass.")
    win_metric: Literal["design", "similarity"] = Field(
        description="What decides a win against the description's page (`win_rate`): 'design' (the default), the "
        "design metric of `sweetflow.frontend.design`: the screenshot's pixels, the page's words and its sections in "
        "order, which a blank or one-colour page lacks; chosen on properties alone: the target scores 1, and on "
        "held-out generated tasks the description's page beats a blank or one-colour page on 100% of them and "
        "another task's target on 93% (docs/benchmark.md). 'similarity': the `metric` above, as before (with "
        "'pixels' a constant gray page beat the description's page on 62% of tasks). Both are reported either way."
    )

    @model_validator(mode="after")
    def _clip_needs_checkpoint(self) -> SimilarityParams:
        if self.metric == "clip" and self.clip_checkpoint is None:
            raise ValueError("metric 'clip' needs clip_checkpoint (a local directory with a CLIP model)")
        return self


class FrontendTasksParams(ColbenchTasksParams):
    """Frontend design tasks: generated offline (Tailwind pages of many site types) or imported from ColBench."""

    source: Literal["procedural", "colbench"] = Field(
        description="'procedural': generate pages and their vague descriptions by seed; 'colbench': import the "
        "official "
        "frontend JSONL files (problem_description, ground_truth)."
    )
    n_test: int = Field(
        ge=1, le=500, description="Test tasks to generate (procedural capacity 500; ColBench's test set has 500)."
    )


class DesignSimulatorParams(ServedBackend):
    """The simulated human of frontend design tasks: it compares the agent's page with the target."""

    backend: Literal["scripted", "openai"] = Field(
        description="'scripted': offline, names the most outstanding differences read from both pages' HTML; 'openai': "
        "a vision-language model is shown screenshots of both pages (needs the renderer)."
    )
    max_differences: int = Field(
        ge=1, description="Scripted: most differences named in one reply (whole sentences, most outstanding first)."
    )
    max_reply_chars: int = Field(ge=1, description="Replies are cut to this many characters (ColBench: 1,000).")
    max_new_tokens: int = Field(ge=1, description="Backend 'openai': most tokens generated per reply.")
    endpoint: EndpointParams | None = Field(
        description="Backend 'openai': the endpoint serving the vision-language model."
    )


class FrontendScoringParams(Section):
    """How frontend answers are scored: rendered offline, then compared with the target's screenshot."""

    render: RenderParams = Field(description=RenderParams.__doc__)
    similarity: SimilarityParams = Field(description=SimilarityParams.__doc__)


class FrontendParams(DomainParams):
    """Frontend design (ColBench): a Tailwind page, rewarded by the visual similarity of its screenshot to the "
    "target's."""

    tasks: FrontendTasksParams = Field(description=FrontendTasksParams.__doc__)
    simulator: DesignSimulatorParams = Field(description=DesignSimulatorParams.__doc__)
    scoring: FrontendScoringParams = Field(description=FrontendScoringParams.__doc__)
    model: ModelParams = Field(description=ModelParams.__doc__)
