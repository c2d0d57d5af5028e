"""The run's name and tags, as the Tracker offers them: set before ``start()`` they make the run; set
later they are edits of the run (``tunetrack.edits``), the same records ``tunetrack rename`` and
``tunetrack tag`` make, sent through the writer while it runs and stored at once after ``finish()``."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from .._warnings import warn_once
from ..edits import fold, new_edit
from ..errors import InvalidValue
from ..writer import RunEdit, Writer


class Editing:
    """The Tracker's name and tags (a part of ``Tracker``)."""

    id: str | None
    strict: bool
    _name: str | None
    _tags: list[str]
    _lock: threading.RLock
    _started: bool
    _active: bool
    _finished: bool
    _writer: Writer | None

    @property
    def name(self) -> str | None:
        """The run's name. Set before ``start()``, it names the run; set later, it renames the run (an
        edit, as ``tunetrack rename`` makes: readers show the new name, and find the run by it)."""
        return self._name

    @name.setter
    def name(self, value: str | None) -> None:
        if value is None and not self._started:
            self._name = None  # the default name, made at start()
            return
        self._edit(name="" if value is None else value)  # a run that exists keeps a name

    @property
    def tags(self) -> list[str]:
        """The run's tags (a copy: change them with ``add_tags`` and ``remove_tags``)."""
        return list(self._tags)

    def add_tags(self, *tags: str) -> None:
        """Tag the run. Before ``start()`` the run is created with these tags; later they are added to
        it (an edit, as ``tunetrack tag RUN +TAG`` makes). Never raises, except in ``strict`` mode."""
        if tags:
            self._edit(add=tags)

    def remove_tags(self, *tags: str) -> None:
        """Untag the run (before or after ``start()``, as ``add_tags``)."""
        if tags:
            self._edit(remove=tags)

    def _edit(self, name: Any = None, add: Sequence[str] = (), remove: Sequence[str] = ()) -> None:
        """Apply an edit here, and record it in the run once the run exists: through the writer while
        it runs, at once after ``finish()``. Only the process that records the run records it (on
        other ranks it only changes this object)."""
        try:
            body = new_edit(name=name, add=add, remove=remove)
        except ValueError as exc:
            if self.strict:
                raise InvalidValue(str(exc)) from None
            warn_once(f"edit:{exc}", f"the run was not changed: {exc}")
            return
        with self._lock:
            changed = fold({"name": self._name, "tags": self._tags}, [("", body)])
            self._name, self._tags = changed.name, changed.tags
            writer = self._writer if self._started and self._active else None
            if writer is not None and not self._finished:
                writer.channel.send(RunEdit(body))  # finish() drains it before the writer stops
                return
        if writer is None:
            return
        try:
            writer.write_edit(body)  # a store that cannot be written is warned about there
        except Exception as exc:
            if self.strict:
                raise
            warn_once(f"edit-after:{self.id}", f"could not store an edit of run {self.id}: {exc!r}")
