"""What could not be kept: counted by the tracker and the writer, reported by ``finish()`` and stored
in the run's end record."""

from __future__ import annotations


class Counters:
    def __init__(self) -> None:
        self.dropped_rows = 0  # the queue was full (the writer could not keep up)
        self.dropped_values = 0  # unsupported values
        self.lost_rows = 0  # the store could not write them (disk full, unwritable dir)
        self.late_rows = 0  # logged after finish()

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))
