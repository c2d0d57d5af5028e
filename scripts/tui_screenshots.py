"""The screenshots of docs/tui.md: ``tunetrack tui`` on the runs a new user has (the real Trainer, TRL
and crash runs ``tests/e2e/hf/real_runs.py`` records), driven by Textual's pilot and saved as the
terminal's own SVG under docs/img/.

    PYTHONPATH=src:tests:examples .nox/hf/bin/python tests/e2e/hf/real_runs.py /tmp/real
    PYTHONPATH=src .nox/tests/bin/python scripts/tui_screenshots.py /tmp/real
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "src"))

from tunetrack.tui.app import TABS, TunetrackApp  # noqa: E402

IMG = HERE / "docs" / "img"


async def shoot(store: str, name: str, size: tuple[int, int], keys: list[str], **options: object) -> None:
    """Start the view on ``store``, press ``keys`` (``"wait"``: let it look at the store first), save."""
    app = TunetrackApp(dir=store, interval=0.5, **options)  # type: ignore[arg-type]
    async with app.run_test(size=size) as pilot:
        while not app.model.rows:
            await pilot.pause(0.1)
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.3)
        await pilot.pause(1.0)
        app.save_screenshot(str(IMG / f"{name}.svg"))


def tab(name: str) -> str:
    return str([t for t, _, _ in TABS].index(name) + 1)


def main() -> None:
    store = sys.argv[1]
    sweep = {
        "project": "sft-sweep",
        "columns": ["config.learning_rate", "eval/loss:min"],
        "sort": "eval/loss:min",
    }
    asyncio.run(shoot(store, "tui", (140, 36), ["x", "space", "down", "space", "down", "space"], **sweep))
    asyncio.run(shoot(store, "tui-narrow", (80, 24), []))
    grpo = {"where": "name = 'grpo-digit'"}
    asyncio.run(shoot(store, "tui-samples", (140, 36), [tab("samples"), "tab", "o", "o", "o"], **grpo))
    crash = {"where": "name = 'crash-cuda'"}
    asyncio.run(shoot(store, "tui-console", (140, 30), [tab("console")], **crash))


if __name__ == "__main__":
    main()
