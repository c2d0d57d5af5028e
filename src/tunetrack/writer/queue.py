"""The row queue inside a writer's ``Channel``: the training thread appends, the writer takes."""

from __future__ import annotations

from collections import deque
from itertools import repeat

from ..store.codec import Rows

_popleft = deque.popleft


class RowQueue:
    """Rows travel from ``Tracker.log`` to the writer in four parallel deques, not one tuple per row:
    appending allocates no garbage-collected container, so a fast logging loop never makes the
    collector walk the backlog. ``rows`` is appended last, so ``len(rows)`` rows are always complete."""

    __slots__ = ("all_float", "cap", "rows", "steps", "times")

    def __init__(self, cap: int) -> None:
        self.steps: deque = deque()
        self.times: deque = deque()
        self.all_float: deque = deque()
        self.rows: deque = deque()
        #: rows ``log()`` may queue before it waits, then drops. The writer keeps it at
        #: ``max_pending`` values divided by the width of the rows it sees, so memory is bounded in
        #: values whatever the number of metrics per row.
        self.cap = cap

    def take(self, n: int, into: Rows) -> None:
        """Move the next ``n`` rows into ``into`` (on the writer thread; C-level loops only)."""
        into.steps += map(_popleft, repeat(self.steps, n))
        into.times += map(_popleft, repeat(self.times, n))
        into.values += map(_popleft, repeat(self.rows, n))
        flags = list(map(_popleft, repeat(self.all_float, n)))  # all of them, before all() looks
        into.all_float = into.all_float and all(flags)
