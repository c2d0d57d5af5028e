"""The screenshot of docs/ui.md's "Many keys": a run of 40 x 250 mixture-of-experts keys on its run
page, its family card, taken with Playwright and the system's Chromium, saved as a small palette PNG
under docs/img/ (``sweep_screenshots.save``).

    PYTHONPATH=src:tests .nox/ui/bin/python scripts/many_keys_screenshot.py
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(HERE / "tests"), str(HERE / "src"), str(HERE / "scripts")]

from playwright.sync_api import sync_playwright  # noqa: E402
from sweep_screenshots import save  # noqa: E402

from support.helpers import Server  # noqa: E402
from tunetrack import Tracker  # noqa: E402


def main() -> None:
    root = Path(tempfile.mkdtemp())
    t = Tracker(dir=root, name="moe-8x", system=False, console=False).start()
    for step in range(1, 201):
        row = {}
        for layer in range(40):
            for expert in range(250):
                # a balanced load with some noise; layer 17's expert 42 runs hot from step 120
                noise = math.sin(layer * 12.9898 + expert * 78.233 + step * 0.37) * 0.25
                hot = (
                    3.0 * (1 - math.exp(-(step - 120) / 20))
                    if (layer, expert) == (17, 42) and step > 120
                    else 0.0
                )
                row[f"moe/layer{layer}/expert{expert}/load"] = 1.0 + noise / (1 + step / 50) + hot
        t.log({**row, "loss": 2.0 / math.sqrt(step)}, step=step)
    t.finish()
    server = Server(root)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{server.base}/run/{t.id}")
            card = page.wait_for_selector(".family[data-drawn]", timeout=60_000)
            card.scroll_into_view_if_needed()
            box = card.bounding_box()
            page.mouse.move(0, 0)
            save(
                page.screenshot(
                    clip={"x": 0, "y": box["y"] - 50, "width": 1280, "height": box["height"] + 60}
                ),
                "ui-many-keys.png",
            )
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
