"""What the frontend tests share: render parameters for this checkout and the real ColBench rows."""

from __future__ import annotations

import json

from sweetflow.params import RenderParams
from tests.conftest import ROOT, SAMPLE

TAILWIND = ROOT / "vendor" / "tailwindcss-2.2.19" / "tailwind.min.css"
FRONTEND_ROWS = SAMPLE / "frontend_test_first30.jsonl"


def render_params(**overrides) -> RenderParams:
    """Parameters whose Tailwind path does not depend on the working directory (scripts/setup.sh fetches it)."""
    return RenderParams(**{"tailwind_css": TAILWIND, **overrides})


def frontend_rows() -> list[dict]:
    return [json.loads(line) for line in FRONTEND_ROWS.read_text().splitlines() if line.strip()]
