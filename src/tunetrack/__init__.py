"""tunetrack: a crash-safe, offline experiment tracker for LLM fine-tuning.

``from tunetrack import Tracker`` is all a script needs. Importing tunetrack imports no ML framework
(and not even NumPy): the read API and the backends load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "Tracker": ("tunetrack.tracker", "Tracker"),
    "Backend": ("tunetrack.backends.base", "Backend"),
    "RunInfo": ("tunetrack.backends.base", "RunInfo"),
    "ConsoleBackend": ("tunetrack.backends.console", "ConsoleBackend"),
    "list_runs": ("tunetrack.reader", "list_runs"),
    "open_run": ("tunetrack.reader", "open_run"),
    "TunetrackWarning": ("tunetrack._warnings", "TunetrackWarning"),
    "STATES": ("tunetrack.states", "STATES"),
}

if TYPE_CHECKING:
    from ._warnings import TunetrackWarning
    from .backends.base import Backend, RunInfo
    from .backends.console import ConsoleBackend
    from .reader import list_runs, open_run
    from .states import STATES
    from .tracker import Tracker


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tunetrack' has no attribute {name!r}")


__all__ = [
    "STATES",
    "Backend",
    "ConsoleBackend",
    "RunInfo",
    "Tracker",
    "TunetrackWarning",
    "__version__",
    "list_runs",
    "open_run",
]
