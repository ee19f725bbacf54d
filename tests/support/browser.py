"""What the frontend tests share: the local Tailwind copy and the real ColBench rows."""

from __future__ import annotations

import json

from tests.support.project import ROOT, SAMPLE

TAILWIND = ROOT / "vendor" / "tailwindcss-2.2.19" / "tailwind.min.css"
FRONTEND_ROWS = SAMPLE / "frontend_test_first30.jsonl"


def frontend_rows() -> list[dict]:
    return [json.loads(line) for line in FRONTEND_ROWS.read_text().splitlines() if line.strip()]
