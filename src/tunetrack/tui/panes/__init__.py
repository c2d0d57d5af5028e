"""The tabs on the right of the terminal view, one module each: what they show of the picked runs
(the chart) or of the run under the cursor (its console, system metrics, samples, checkpoints and
events). The app calls ``show`` on the tab in view after each look at the store that found a change,
and when the cursor moves or a tab comes into view; a tab draws again only what changed."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding
from textual.containers import Vertical

from ..model import Model


class Pane(Vertical):
    """One tab's content; ``palette``: the runs' colours (``palette.PALETTES``)."""

    #: the tab's keys that work wherever the focus is while the tab is in view (the app binds them and
    #: runs their actions on the pane); no two tabs share a key. Keys that need the focus in one of
    #: the pane's widgets (the crosshair's arrows) are its ``BINDINGS``.
    KEYS: ClassVar[list[Binding]] = []

    def __init__(self, palette: str = "tableau", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.palette = palette

    def show(self, model: Model) -> None:
        """Draw what ``model`` holds now (``model.picked``, ``model.current``), if it changed."""
        raise NotImplementedError
