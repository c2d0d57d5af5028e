"""The screenshots of docs/ui.md's "Stopping a run": a live run (a small training loop of its own, in a
process of its own) stopped from its page, taken with Playwright and the system's Chromium, written as
small palette PNGs under docs/img/.

    PYTHONPATH=src:tests .nox/ui/bin/python scripts/stop_screenshots.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(HERE / "tests"), str(HERE / "scripts"), str(HERE / "src")]

from playwright.sync_api import sync_playwright  # noqa: E402
from sweep_screenshots import save  # noqa: E402

from support.helpers import Server, wait_until  # noqa: E402

#: the training loop: its loss falls, then climbs (someone should stop it), until it is asked to stop
TRAIN = textwrap.dedent(
    """
    import math, sys, time
    from tunetrack import Tracker

    run = Tracker(project="sft", name="qwen2.5-0.5b-lr2e-4", system=False,
                  config={"lr": 2e-4, "lora": {"r": 16, "alpha": 32}, "model": "Qwen/Qwen2.5-0.5B"}).start()
    print(run.id, flush=True)
    step = 0
    while not run.should_stop:
        step += 1
        loss = 2.4 / step**0.25 + (0.004 * (step - 120)) ** 2 * (step > 120) + 0.03 * math.sin(step)
        run.log({"loss": loss, "lr": 2e-4 * min(1.0, step / 20)}, step=step)
        if step % 25 == 0:
            print(f"step {step}: loss {loss:.3f}", flush=True)
        time.sleep(0.02)
    run.finish()
    """
)


def main() -> None:
    work = Path(tempfile.mkdtemp())
    root = work / "runs"
    (work / "train.py").write_text(TRAIN)
    env = {**os.environ, "TUNETRACK_DIR": str(root), "TUNETRACK_CONTROL_INTERVAL": "0.2"}
    env["PYTHONPATH"] = str(HERE / "src")
    trainer = subprocess.Popen(
        [sys.executable, "train.py"], cwd=work, env=env, stdout=subprocess.PIPE, text=True
    )
    run_id = trainer.stdout.readline().strip()
    server = Server(root)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            page = browser.new_page(viewport={"width": 1440, "height": 860})
            page.goto(f"{server.base}/run/{run_id}")
            page.wait_for_selector("#stop:not([hidden])")
            wait_until(
                lambda: int(page.get_attribute("#charts .chart[data-key='loss']", "data-points") or 0) > 200
            )
            page.click("#stop")
            page.fill("#stop-reason", "loss diverged after step 120")
            save(page.screenshot(), "ui-stop-asking.png")
            page.click("#stop-form button[type=submit]")
            wait_until(lambda: page.inner_text("#state").startswith("stopped"))
            page.set_viewport_size({"width": 1024, "height": 860})
            save(page.screenshot(), "ui-stop-stopped.png")
            browser.close()
    finally:
        server.stop()
        trainer.wait(timeout=30)


if __name__ == "__main__":
    main()
