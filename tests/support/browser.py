"""What the frontend tests share: the local Tailwind copy and the real ColBench rows."""

from __future__ import annotations

import json
from contextlib import contextmanager

from tests.support.project import ROOT, SAMPLE

TAILWIND = ROOT / "vendor" / "tailwindcss-2.2.19" / "tailwind.min.css"
FRONTEND_ROWS = SAMPLE / "frontend_test_first30.jsonl"


def frontend_rows() -> list[dict]:
    return [json.loads(line) for line in FRONTEND_ROWS.read_text().splitlines() if line.strip()]


@contextmanager
def chromium_page():
    """A page of the system's Chromium (as the renderer launches it), recording every console error,
    uncaught exception and failed request; yields (page, problems)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"exception: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            yield page, problems
        finally:
            browser.close()
