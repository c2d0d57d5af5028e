"""Being steered from outside: a live run learns that someone asked it to stop.

``tunetrack stop``, the dashboard's Stop button, an agent's ``stop_run`` and a rule all leave a stop
request in the run's store (an edit: ``tunetrack.edits``), wherever the run's process is. A thread of
the recording process looks for one every ``settings.control_interval()`` seconds (a folder's run:
its edit files; a bucket's: one short LIST of its edits' index entries), never on the training thread.
The first request found is handed to the tracker, whose adapters then stop training the way their
framework stops cleanly, and whose run then ends ``stopped``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .. import settings
from .._warnings import warn_once
from ..edits import stop_request
from ..store.base import Store


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
                requests = [r for _, body in self.store.edits(self.run_id) if (r := stop_request(body))]
            except Exception as exc:  # a store that does not answer now may answer at the next look
                warn_once(
                    f"control:{self.run_id}",
                    f"could not look for requests to stop run {self.run_id}: {exc!r}",
                )
                continue
            if requests:
                self.found(min(requests, key=lambda r: r["time"]))
                return

    def close(self) -> None:
        self.done.set()
