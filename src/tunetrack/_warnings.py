"""One warning per cause: training-time faults are reported once and counted, never raised."""

from __future__ import annotations

import threading
import warnings


class TunetrackWarning(UserWarning):
    """Something tunetrack could not do; training goes on. Filter with this category."""


_seen: set[str] = set()
_lock = threading.Lock()


def warn_once(key: str, message: str) -> None:
    """Emit ``message`` the first time ``key`` is seen in this process."""
    with _lock:
        if key in _seen:
            return
        _seen.add(key)
    warnings.warn(f"tunetrack: {message}", TunetrackWarning, stacklevel=3)
