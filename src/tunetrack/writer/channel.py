"""The one way into a writer: rows, typed messages, and the count of what could not be kept.

A ``Writer`` owns its channel; the tracker and the importers hand it everything through
``put_row`` and ``send`` and ask for ``flush``. The channel is a pair of deques (``deque.append`` and
``popleft`` are atomic, so the training thread never takes a lock) with one bounded wait for room,
``wait_for_room``: ``log()`` gives the writer a few milliseconds before it drops a row, an importer
waits as long as the writer keeps taking.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from .._warnings import warn_once
from .counters import Counters
from .messages import Flush, Message
from .queue import RowQueue

#: how long ``log()`` waits for room in a full queue before it drops the row (and counts it)
BACKPRESSURE = 0.005
#: messages an importer may queue before ``send(..., wait=...)`` waits (the tracker's are few)
MESSAGE_BACKLOG = 50_000
#: how often a wait for room looks again (the writer takes rows every tick, 20 ms by default)
POLL = 0.001


class Channel:
    """Rows and messages on their way to the writer thread."""

    __slots__ = (
        "_alive",
        "_flags",
        "_rows",
        "_send",
        "_steps",
        "_times",
        "counters",
        "label",
        "max_pending",
        "messages",
        "queue",
    )

    def __init__(self, max_pending: int, alive: Callable[[], bool]) -> None:
        # a row cap until the writer has seen the rows' width (10 values a row)
        self.queue = RowQueue(cap=max(max_pending // 10, 1))
        self.messages: deque[Message] = deque()
        self.counters = Counters()
        #: the run's id once the writer knows it (for warnings about this run)
        self.label: str | None = None
        self._alive = alive
        # bound once: ``put_row`` is on the training thread's hot path
        queue = self.queue
        self._steps, self._times = queue.steps.append, queue.times.append
        self._flags, self._rows = queue.all_float.append, queue.rows.append
        self._send = self.messages.append
        #: values (not rows) the queue may hold: the writer turns it into a row cap as it sees rows
        self.max_pending = max_pending

    def put_row(
        self, step: int, unix_time: float, row: dict, all_float: bool = False, wait: float = BACKPRESSURE
    ) -> bool:
        """Queue one row. When the queue is full, wait up to ``wait`` seconds for the writer to make
        room; past that the row is dropped and counted (False)."""
        if len(self.queue.rows) >= self.queue.cap and not self.wait_for_room(wait):
            self._dropped()
            return False
        self._steps(step)
        self._times(unix_time)
        self._flags(all_float)
        self._rows(row)  # last: the writer takes only rows whose parts are all queued
        return True

    def send(self, message: Message, wait: float = 0.0) -> None:
        """Queue a message. With ``wait`` (an importer's long series of system samples), first wait up
        to that long while the writer has ``MESSAGE_BACKLOG`` messages to take; never drops one."""
        if wait and len(self.messages) >= MESSAGE_BACKLOG:
            self._wait(lambda: len(self.messages) < MESSAGE_BACKLOG, wait)
        self._send(message)

    def flush(self, timeout: float) -> bool:
        """Block until everything queued so far is written and flushed to the OS (False: the writer
        is not running, or did not get there within ``timeout``)."""
        if not self._alive():
            return False
        done = threading.Event()
        self._send(Flush(done))
        return done.wait(timeout)

    def wait_for_room(self, timeout: float) -> bool:
        """The one wait for room: until the writer has taken enough rows that the queue is under its
        cap (True), or ``timeout`` has passed or the writer stopped (False)."""
        queue = self.queue
        return self._wait(lambda: len(queue.rows) < queue.cap, timeout)

    def _wait(self, room: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not room():
            if time.monotonic() >= deadline or not self._alive():
                return False
            time.sleep(POLL)
        return True

    def _dropped(self) -> None:
        self.counters.dropped_rows += 1
        warn_once(
            f"full:{self.label}",
            f"the writer cannot keep up ({len(self.queue.rows):,} rows, about "
            f"{self.max_pending:,} values, pending); "
            "rows are being dropped and counted (see the run's summary)",
        )
