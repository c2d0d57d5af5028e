"""The screenshots of docs/samples.md: two GRPO-like runs (a multiplication task, a rule-based reward,
TRL's completions table) in a temporary store, the dashboard on a free port, and Chromium through
Playwright taking the Samples view, the same prompt across training and two runs side by side.

    PYTHONPATH=src /work/main/.nox/ui/bin/python scripts/samples_screenshots.py   # writes docs/images/*.png

Needs the ``ui`` extra and Playwright with a Chromium at /usr/bin/chromium (or CHROMIUM=path). Each
PNG is reduced to a palette of 128 colours, so that it stays under about 150 kB.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from tunetrack import Tracker

DOCS = Path(__file__).resolve().parents[1] / "docs" / "images"
PROBLEMS = [(12, 7), (23, 4), (9, 14), (31, 3), (16, 6), (27, 5), (8, 19), (45, 2)]


def completion(rng: random.Random, a: int, b: int, skill: float) -> tuple[str, float, float]:
    """A completion, its accuracy reward and its format reward: more often right as ``skill`` grows."""
    right = rng.random() < skill
    answer = a * b if right else a * b + rng.choice([-10, -1, 1, 2, 10])
    if rng.random() < 0.5 + skill / 2:
        think = rng.choice(
            [
                f"<think>{a} × {b} = {a} × {b - 1} + {a} = {a * (b - 1)} + {a}.</think>",
                f"<think>Multiply {a} by {b}: that gives {answer}.</think>",
            ]
        )
        formatted = 1.0
    else:
        think = f"Let me compute {a} times {b} step by step."
        formatted = 0.0
    return f"{think}\nThe answer is {answer}.", float(right), formatted


def seed(root: Path, name: str, lr: float, learn: float) -> str:
    rng = random.Random(name)
    t = Tracker(dir=root, project="grpo-math", name=name, config={"learning_rate": lr}, system=False).start()
    for step in range(1, 21):
        skill = min(0.95, 0.2 + learn * step)
        rows = []
        for a, b in PROBLEMS:
            for _ in range(4):
                text, accuracy, formatted = completion(rng, a, b, skill)
                rows.append(
                    {
                        "step": step,
                        "prompt": [
                            {"role": "system", "content": "Think in <think> tags, then answer."},
                            {"role": "user", "content": f"What is {a} × {b}?"},
                        ],
                        "completion": text,
                        "accuracy_reward": accuracy,
                        "format_reward": formatted,
                        "advantage": round(accuracy + formatted - 2 * skill, 3),
                    }
                )
        t.log({"loss": 1.0 - 0.8 * skill, "reward": skill}, step=step)
        t.log_table("completions", rows, step=step)
    t.finish()
    return t.id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shrink(path: Path) -> None:
    Image.open(path).convert("RGB").quantize(128).save(path, optimize=True)
    print(f"{path}: {path.stat().st_size / 1e3:.0f} kB")


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        a = seed(root, "lr-1e-6", 1e-6, 0.02)
        b = seed(root, "lr-3e-6", 3e-6, 0.04)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "tunetrack", "ui", "--dir", str(root), "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"{base}/static/app.css", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
                page = browser.new_page(viewport={"width": 1100, "height": 900})
                page.goto(f"{base}/run/{a}")
                page.wait_for_selector("#sample-table .vrow")
                page.wait_for_selector("#sample-curve canvas")
                page.eval_on_selector("#sample-table .vbody", "b => { b.style.height = '420px'; }")
                page.click("#sample-table .vhead [data-sort='accuracy_reward']")
                page.wait_for_selector("#sample-table .vhead [data-sort='accuracy_reward']:has-text('▲')")
                page.click("#sample-table .vhead [data-sort='accuracy_reward']")
                page.wait_for_selector("#sample-table .vhead [data-sort='accuracy_reward']:has-text('▼')")
                page.locator("#samples-section").screenshot(path=str(DOCS / "samples-view.png"))
                page.click("#sample-table .vrow[data-index='0']")
                page.click("#sample-detail button")
                page.wait_for_selector("#sample-across tbody tr")
                page.eval_on_selector(
                    "#sample-across", "b => { b.style.maxHeight = '420px'; b.style.overflow = 'hidden'; }"
                )
                page.locator("#sample-detail").screenshot(path=str(DOCS / "samples-same-prompt.png"))
                page.goto(f"{base}/compare?ids={a},{b}&key=completions&step=12#samples")
                page.wait_for_selector(".pairs .side")
                page.locator("#samples-section").screenshot(path=str(DOCS / "samples-side-by-side.png"))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    for name in ("samples-view", "samples-same-prompt", "samples-side-by-side"):
        shrink(DOCS / f"{name}.png")


if __name__ == "__main__":
    main()
