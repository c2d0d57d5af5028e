"""tunetrack's own settings, read from the environment in one place.

``TUNETRACK_DIR`` (where the run store is), ``TUNETRACK_SYSTEM`` and ``TUNETRACK_SYSTEM_INTERVAL``
(system metrics), ``TUNETRACK_STALE_AFTER`` (when a silent run counts as crashed). An argument given
in code always wins over the environment; a malformed value falls back to the default.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The store's folder when neither an argument nor ``$TUNETRACK_DIR`` names one (in the working dir).
DEFAULT_DIRNAME = "tunetrack_runs"


def store_location(
    dir: str | os.PathLike[str] | None = None, default: str | os.PathLike[str] | None = None
) -> Path:
    """The run store: ``dir``, else ``$TUNETRACK_DIR``, else ``default`` (an adapter's own output
    folder, such as torchtune's ``log_dir``), else ``./tunetrack_runs``."""
    chosen = dir if dir is not None else os.environ.get("TUNETRACK_DIR") or default
    return Path(chosen).expanduser() if chosen else Path.cwd() / DEFAULT_DIRNAME


def _float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def system_enabled(flag: bool | None = None) -> bool:
    """System metrics are on unless ``flag`` is False or ``TUNETRACK_SYSTEM=0``."""
    return flag if flag is not None else os.environ.get("TUNETRACK_SYSTEM", "1") != "0"


def system_interval(interval: float | None = None) -> float:
    """Seconds between two system-metric samples: ``interval``, else the environment, else 10."""
    return interval or _float("TUNETRACK_SYSTEM_INTERVAL", 10.0)


def stale_after() -> float:
    """Seconds without a heartbeat after which a run without an end record reads ``crashed``."""
    return _float("TUNETRACK_STALE_AFTER", 60.0)
