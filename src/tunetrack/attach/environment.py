"""What ``tunetrack run`` tells the processes it starts, through their environment.

``TUNETRACK_RUN_ID`` names the run they join (with ``TUNETRACK_DIR``, its store): the first tracker a
process starts records into it as one more process of the run (``take_run``), whatever project or
name its adapter was given, so a command and everything it launches is one run. The command's own
process records the console of all of them (it holds their terminal) and the machine's system
metrics, so those are off in the processes it starts.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

#: the run every process of the command joins
RUN_ID = "TUNETRACK_RUN_ID"
_taken = False
_lock = threading.Lock()


def child_environment(run_id: str, store: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the command ``tunetrack run`` starts: ``env`` (default: this process's)
    with the run to join and its store, and the console and system metrics left to the command's
    own process."""
    return {
        **(os.environ if env is None else env),
        RUN_ID: run_id,
        "TUNETRACK_DIR": store,
        "TUNETRACK_CONSOLE": "0",
        "TUNETRACK_SYSTEM": "0",
    }


def under_command() -> bool:
    """Whether this process was started by ``tunetrack run`` (its adapters attach themselves)."""
    return bool(os.environ.get(RUN_ID))


def take_run() -> str | None:
    """The run this process's first tracker joins, once per process; None if it was taken, or the
    process was not started by ``tunetrack run``. A later tracker (a second ``Trainer`` in the
    same script) records a run of its own, as it would without ``tunetrack run``."""
    global _taken
    run_id = os.environ.get(RUN_ID)
    with _lock:
        if not run_id or _taken:
            return None
        _taken = True
    return run_id
