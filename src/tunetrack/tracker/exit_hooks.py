"""Truthful run states without a server: the process-wide hooks that end every live run.

Once per process: ``atexit`` (a script that never calls ``finish()`` ends ``finished``), the exception
hook (``failed``, with the traceback), and SIGTERM/SIGINT handlers (``killed``) that chain to the
handlers that were there before. A process killed without running Python (SIGKILL, the OOM killer)
runs none of them: readers then see its heartbeat stop and call the run ``crashed``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import traceback
import weakref
from typing import TYPE_CHECKING, Any

from .. import states

if TYPE_CHECKING:
    from .tracker import Tracker


_live: weakref.WeakSet[Tracker] = weakref.WeakSet()
_lock = threading.Lock()
_installed = False
_previous_handlers: dict[int, Any] = {}
_previous_excepthook = sys.excepthook


def track(tracker: Tracker) -> None:
    """End ``tracker`` with the process (installs the hooks the first time)."""
    _live.add(tracker)
    _install()


def untrack(tracker: Tracker) -> None:
    _live.discard(tracker)


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    atexit.register(_finish_all)
    sys.excepthook = _excepthook
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError, OSError):  # not allowed here (embedded interpreter)
                _previous_handlers[signum] = signal.signal(signum, _on_signal)


def _finish_all(state: str | None = None, tb: str | None = None) -> None:
    for tracker in list(_live):
        tracker.finish(state, tb)


def _excepthook(exc_type: Any, exc: Any, tb: Any) -> None:
    killed = issubclass(exc_type, KeyboardInterrupt)
    _finish_all(
        states.KILLED if killed else states.FAILED, "".join(traceback.format_exception(exc_type, exc, tb))
    )
    _previous_excepthook(exc_type, exc, tb)


def _on_signal(signum: int, frame: Any) -> None:
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if previous is signal.SIG_IGN:
        return
    for tracker in list(_live):
        tracker._exit_state = states.KILLED
        tracker.flush(timeout=5.0)
    if callable(previous):
        previous(signum, frame)  # e.g. KeyboardInterrupt for SIGINT: the excepthook/atexit end the run
        return
    _finish_all(states.KILLED)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
