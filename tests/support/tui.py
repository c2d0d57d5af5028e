"""Driving ``tunetrack tui`` with Textual's pilot: wait for what the screen shows, read its runs pane."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tunetrack.tui.app import TABS, TunetrackApp


async def until(pilot: Any, condition: Callable[[], Any], timeout: float = 30.0) -> None:
    """Let the app run until ``condition()`` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await pilot.pause(0.05)


def cells(app: TunetrackApp) -> list[list[str]]:
    """The runs pane's rows as shown: the picked mark, then a cell per column."""
    table = app.query_one("#runs")
    return [table.cells_at(i) for i in range(table.row_count)]


def tab_key(name: str) -> str:
    """The key that brings the tab ``name`` into view."""
    return str([tab for tab, _, _ in TABS].index(name) + 1)
