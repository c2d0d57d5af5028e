"""The run's name and tags, as the Tracker offers them: set before ``start()`` they make the run; set
later they are edits of the run (``tunetrack.edits``), the same records ``tunetrack rename`` and
``tunetrack tag`` make, which the Tracker delivers to the run (``Labels.deliver``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._warnings import warn_once
from ..edits import fold, new_edit
from ..errors import InvalidValue


class Labels:
    """The run's name and tags (a part of ``Tracker``): it applies each edit here and hands its record
    to ``deliver``, which stores it once the run exists."""

    def __init__(
        self,
        name: str | None,
        tags: Sequence[str] | None,
        strict: bool,
        deliver: Callable[[dict[str, Any]], None],
    ) -> None:
        self.name = name
        self.tags = list(tags or [])
        self._strict = strict
        self._deliver = deliver

    def edit(self, name: Any = None, add: Sequence[str] = (), remove: Sequence[str] = ()) -> None:
        """Apply an edit (a bad name or tag is warned about once and changes nothing; ``strict``
        raises), then deliver its record."""
        try:
            body = new_edit(name=name, add=add, remove=remove)
        except ValueError as exc:
            if self._strict:
                raise InvalidValue(str(exc)) from None
            warn_once(f"edit:{exc}", f"the run was not changed: {exc}")
            return
        changed = fold({"name": self.name, "tags": self.tags}, [("", body)])
        self.name, self.tags = changed.name, changed.tags
        self._deliver(body)
