"""How a trackio run says how it ended: trackio has no run status, so the backend raises an alert
titled ``run <state>`` and the importer reads the state back from it."""

from __future__ import annotations

PREFIX = "run "


def end_alert(state: str) -> str:
    """The title of the alert that records a run's end ``state``."""
    return f"{PREFIX}{state}"


def ended(title: str) -> str | None:
    """The state an end alert's ``title`` records, or None for any other alert."""
    return title[len(PREFIX) :] if title.startswith(PREFIX) else None
