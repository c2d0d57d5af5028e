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
from typing import Any, Protocol

from ..states import State


class LiveRun(Protocol):
    """What the hooks need of a run that is recording (a ``Tracker``)."""

    def flush(self, timeout: float = ...) -> bool: ...

    def finish(self, state: str | None = None, error: str | None = None) -> None: ...

    def hurry(self) -> None:
        """Cut short a ``finish()`` under way (stop waiting for mirrors), so the end is recorded."""
        ...


#: runs recording, held (not weakly): a run whose Tracker the script dropped without ``finish()``
#: (reassigned in a loop, a notebook cell run again) keeps recording and still ends with the process,
#: with every row it was given; a weak reference let it vanish with its queued rows and read crashed
_live: set[LiveRun] = set()
_finishing: weakref.WeakSet[LiveRun] = weakref.WeakSet()
_lock = threading.Lock()
_installed = False
_previous_handlers: dict[int, Any] = {}
_previous_excepthook = sys.excepthook
#: the runs that were recording when SIGTERM or SIGINT arrived: they end ``killed`` unless their
#: ``finish()`` is given a state (a run started after a caught Ctrl-C in a notebook is not one of them)
_signalled: weakref.WeakSet[LiveRun] = weakref.WeakSet()


def track(run: LiveRun) -> None:
    """End ``run`` with the process (installs the hooks the first time)."""
    _live.add(run)
    _install()


def finishing(run: LiveRun) -> None:
    """``run`` is in ``finish()``: a signal now cuts its wait for mirrors short instead of ending it."""
    _live.discard(run)
    _finishing.add(run)


def untrack(run: LiveRun) -> None:
    _live.discard(run)
    _finishing.discard(run)


def exit_state(run: LiveRun) -> str | None:
    """``killed`` if SIGTERM/SIGINT reached this process while ``run`` was recording, else None."""
    return State.KILLED if run in _signalled else None


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
    for run in list(_live):
        run.finish(state, tb)


def _excepthook(exc_type: Any, exc: Any, tb: Any) -> None:
    killed = issubclass(exc_type, KeyboardInterrupt)
    _finish_all(
        State.KILLED if killed else State.FAILED, "".join(traceback.format_exception(exc_type, exc, tb))
    )
    _previous_excepthook(exc_type, exc, tb)


def _on_signal(signum: int, frame: Any) -> None:
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if previous is signal.SIG_IGN:
        return
    for run in list(_finishing):
        run.hurry()
    for run in list(_live):
        _signalled.add(run)
        run.flush(timeout=5.0)
    if callable(previous):
        previous(signum, frame)  # e.g. KeyboardInterrupt for SIGINT: the excepthook/atexit end the run
        return
    _finish_all(State.KILLED)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
