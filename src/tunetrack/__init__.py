"""tunetrack: a crash-safe, offline experiment tracker for LLM fine-tuning.

``from tunetrack import Tracker`` is all a script needs. Importing tunetrack imports no ML framework
(and not even NumPy): the read API and the backends load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "Tracker": ("tunetrack.tracker", "Tracker"),
    "Histogram": ("tunetrack.histograms", "Histogram"),
    "log_evaluation": ("tunetrack.tracker", "log_evaluation"),
    "Rule": ("tunetrack.monitoring.rules", "Rule"),
    "load_rules": ("tunetrack.monitoring.rules", "load_rules"),
    "Backend": ("tunetrack.backends.base", "Backend"),
    "RunInfo": ("tunetrack.backends.base", "RunInfo"),
    "ConsoleBackend": ("tunetrack.backends.stdout", "ConsoleBackend"),
    "list_runs": ("tunetrack.reader", "list_runs"),
    "open_run": ("tunetrack.reader", "open_run"),
    "TunetrackWarning": ("tunetrack._warnings", "TunetrackWarning"),
    "STATES": ("tunetrack.states", "STATES"),
    "show": ("tunetrack.ui.notebook", "show"),
    "query": ("tunetrack.sql", "query"),
}

if TYPE_CHECKING:
    from ._warnings import TunetrackWarning
    from .backends.base import Backend, RunInfo
    from .backends.stdout import ConsoleBackend
    from .histograms import Histogram
    from .monitoring.rules import Rule, load_rules
    from .reader import list_runs, open_run
    from .sql import query
    from .states import STATES
    from .tracker import Tracker, log_evaluation
    from .ui.notebook import show


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
    "Histogram",
    "Rule",
    "RunInfo",
    "Tracker",
    "TunetrackWarning",
    "__version__",
    "list_runs",
    "load_rules",
    "log_evaluation",
    "open_run",
    "query",
    "show",
]


def _tracker_panel(tracker: Any) -> dict[str, Any] | None:
    """A started Tracker as a cell's value: its live panel (None, the plain repr, when it has no run
    yet, no store, or the notebook extra is missing)."""
    if tracker.id is None or tracker.run_dir is None:
        return None
    try:
        from .ui.notebook import show

        bundle: dict[str, Any] = show(tracker)._repr_mimebundle_()
        return bundle
    except ImportError:
        return None


def _register_notebook_display() -> None:
    """In IPython (Jupyter, VS Code, Colab), display a Tracker as its panel. Registered by the type's
    name, so nothing is imported until a Tracker is shown."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    formatter = getattr(getattr(shell, "display_formatter", None), "mimebundle_formatter", None)
    if formatter is not None:
        formatter.for_type_by_name("tunetrack.tracker.tracker", "Tracker", _tracker_panel)


_register_notebook_display()
