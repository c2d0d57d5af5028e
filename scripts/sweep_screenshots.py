"""The screenshots of docs/sweeps.md: a generated sweep (tests/support/sweep.py) in the dashboard, taken with
Playwright and the system's Chromium, written as small palette PNGs under docs/img/.

    PYTHONPATH=src:tests .nox/ui/bin/python scripts/sweep_screenshots.py
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(HERE / "tests"), str(HERE / "src")]

from PIL import Image  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from support.helpers import Server  # noqa: E402
from support.sweep import make_sweep  # noqa: E402

OUT = HERE / "docs" / "img"


def save(png: bytes, name: str) -> None:
    """As a 128-colour palette PNG: a page of text and lines keeps its look at a fraction of the size."""
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    image.save(OUT / name, optimize=True)
    print(name, (OUT / name).stat().st_size // 1024, "kB")


def main() -> None:
    root = Path(tempfile.mkdtemp())
    runs = make_sweep(root)
    server = Server(root)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1440, "height": 760})
            page.goto(
                f"{server.base}/?key=train/loss&key=eval/loss:min&key=eval/loss:best"
                "&group=all-but-seed&sort=eval/loss:best&where=config.lora.r%20%3E%3D%208"
            )
            page.wait_for_selector("#runs tr.group")
            page.click("#runs tr.group button.expand")
            page.wait_for_selector("#runs tr.member")
            save(page.screenshot(), "sweeps-runs-grouped.png")

            page.goto(
                f"{server.base}/?key=eval/loss:best&hp=eval/loss:best&brush=%5B%22config.lr%22%2C0.0002%2C0.002%5D"
            )
            page.wait_for_selector("#parcoords path.line.dropped")
            page.wait_for_selector("#scatter .u-over")
            save(
                page.screenshot(clip={"x": 0, "y": 0, "width": 1440, "height": 760}),
                "sweeps-hyperparameters.png",
            )

            ids = ",".join(r.id for r in runs if r.config["lora"]["r"] == 16)
            page.goto(f"{server.base}/compare?ids={ids}&group=lr")
            page.wait_for_selector(".chart[data-key='reward'][data-bands]")
            charts = page.query_selector("#charts").bounding_box()
            clip = {"x": 0, "y": charts["y"] - 50, "width": 1440, "height": 440}
            save(page.screenshot(clip=clip, full_page=True), "sweeps-compare-grouped.png")
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
