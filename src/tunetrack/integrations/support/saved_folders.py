"""Checkpoint folders a framework saves without telling its logger (torchtune's checkpointer writes
``epoch_<n>`` or ``step_<n>`` into its ``output_dir``), found as they appear so an adapter can hand
each to ``Tracker.log_checkpoint``. The adapter looks from the training thread, between saves, so a
folder it finds is complete.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


class SavedFolders:
    """The folders under ``parent`` whose names match ``pattern`` (its first group a number), that
    were not there when this was made."""

    def __init__(self, parent: str | os.PathLike[str], pattern: str) -> None:
        self.parent = Path(parent)
        self._pattern = re.compile(pattern)
        self._stamp = self._mtime()
        self._seen = {p.name for p, _ in self._folders()}  # there before the run: not its saves

    def new(self, look: bool = False) -> list[tuple[Path, int]]:
        """The folders that appeared since the last call, with their number, in order. Costs one
        ``stat`` of ``parent`` while it is unchanged (a new folder changes its modification time);
        ``look`` lists it anyway (the end of the run, where a change within the clock's tick matters)."""
        stamp = self._mtime()
        if stamp == self._stamp and not look:
            return []
        self._stamp = stamp
        fresh = [(p, n) for p, n in self._folders() if p.name not in self._seen]
        self._seen.update(p.name for p, _ in fresh)
        return sorted(fresh, key=lambda found: found[1])

    def _mtime(self) -> int | None:
        try:
            return os.stat(self.parent).st_mtime_ns
        except OSError:  # not made yet
            return None

    def _folders(self) -> list[tuple[Path, int]]:
        try:
            entries = list(os.scandir(self.parent))
        except OSError:
            return []
        found = []
        for entry in entries:
            if (match := self._pattern.fullmatch(entry.name)) and entry.is_dir():
                found.append((Path(entry.path), int(match.group(1))))
        return found
