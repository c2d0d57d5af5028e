"""Being steered from outside: a live run learns that someone asked it to stop.

``tunetrack stop``, the dashboard's Stop button, an agent's ``stop_run`` and a rule all leave a stop
request in the run's store (an edit of a fixed name: ``store.layout.STOP_EDIT``), wherever the run's
process is. A thread of the recording process looks for it every ``settings.control_interval()``
seconds (a folder's run: one stat; a bucket's: one GET), never on the training thread. The request
is handed to the tracker, whose adapters then stop training the way their
framework stops cleanly, and whose run then ends ``stopped``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import settings
from .._warnings import warn_once
from ..edits import stop_request
from ..writer import Store


class StopWatch(threading.Thread):
    """Calls ``found(request)`` once, with the run's first stop request (``edits.stop_request``)."""

    def __init__(self, store: Store, run_id: str, found: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(name=f"tunetrack-control-{run_id}", daemon=True)
        self.store, self.run_id, self.found = store, run_id, found
        self.interval = settings.control_interval()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.interval):
            try:
                body = self.store.stop_request(self.run_id)
            except Exception as exc:  # a store that does not answer now may answer at the next look
                warn_once(
                    f"control:{self.run_id}",
                    f"could not look for requests to stop run {self.run_id}: {exc!r}",
                )
                continue
            request = stop_request(body) if body is not None else None
            if request is not None:
                self.found(request)
                return

    def close(self) -> None:
        self.done.set()
