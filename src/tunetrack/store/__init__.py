"""The run store: where runs live, what their files are called (``layout``), what their records hold
(``codec``) and how each record is enveloped (``framing``). ``open_store`` gives the store at a
location; ``local`` is the store in a filesystem folder."""

from __future__ import annotations

import os
from pathlib import Path

from .local import LocalRun, LocalStore


def open_store(location: str | os.PathLike[str]) -> LocalStore:
    """The store at ``location`` (a folder; it need not exist yet)."""
    return LocalStore(Path(location))


__all__ = ["LocalRun", "LocalStore", "open_store"]
