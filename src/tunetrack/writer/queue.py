"""The row queue between ``Tracker.log`` (the training thread appends) and the writer (it takes)."""

from __future__ import annotations

from collections import deque
from itertools import repeat
from typing import Any

from ..store.codec import Rows

_popleft = deque.popleft


class RowQueue:
    """Rows travel from ``Tracker.log`` to the writer in four parallel deques, not one tuple per row:
    appending allocates no garbage-collected container, so a fast logging loop never makes the
    collector walk the backlog. ``rows`` is appended last, so ``len(rows)`` rows are always complete."""

    __slots__ = ("all_float", "cap", "rows", "steps", "times")

    def __init__(self, cap: int = 100_000) -> None:
        self.steps: deque = deque()
        self.times: deque = deque()
        self.all_float: deque = deque()
        self.rows: deque = deque()
        #: rows ``log()`` may queue before it waits, then drops. The writer keeps it at
        #: ``max_pending`` values divided by the width of the rows it sees, so memory is bounded in
        #: values whatever the number of metrics per row.
        self.cap = cap

    def put(self, step: int, unix_time: float, row: dict[str, Any], all_float: bool = False) -> None:
        """Queue one row with its own time (an importer; ``Tracker.log`` appends to the deques itself,
        through bound methods, to save the call)."""
        self.steps.append(step)
        self.times.append(unix_time)
        self.all_float.append(all_float)
        self.rows.append(row)  # last, as in ``Tracker.log``

    def take(self, n: int, into: Rows) -> None:
        """Move the next ``n`` rows into ``into`` (on the writer thread; C-level loops only)."""
        into.steps += map(_popleft, repeat(self.steps, n))
        into.times += map(_popleft, repeat(self.times, n))
        into.values += map(_popleft, repeat(self.rows, n))
        flags = list(map(_popleft, repeat(self.all_float, n)))  # all of them, before all() looks
        into.all_float = into.all_float and all(flags)
