"""A fork's reference to the run it branched from: the ``fork`` field of its ``run.json``. The one
definition: the writer stores a ``ForkRef`` when it creates the fork, readers get it through ``read``.

A fork's history up to the branch step is its parent's and is not copied: ``run.json`` holds only
which run and which step (an object store's listing index carries it too, ``index.index_entry``).
Readers put the parent's rows and events up to that step before the fork's own
(``reader.merge.inherit``). The parent's config as it was when the fork began is the data of the
fork's ``fork`` event (``EVENT``), so that the fork says what it changed even after its parent is gone.
"""

from __future__ import annotations

from typing import Any, TypedDict

#: the field of ``run.json`` that holds a fork's reference
FIELD = "fork"
#: the kind of the event a new fork records at its branch step: ``run``, ``step`` and the parent's
#: ``config`` then
EVENT = "fork"


class ForkRef(TypedDict):
    """Where a fork branched: its parent's id, and the last step of the parent's that is its own."""

    #: the parent's run id (resolved from what the user typed: an id, a name or an id prefix)
    run: str
    #: the parent's rows and events at this step and before are the fork's history
    step: int


#: the reference's fields, as ``docs/architecture.md`` lists them
FIELDS = tuple(ForkRef.__annotations__)


def read(run_json: Any) -> ForkRef | None:
    """The fork reference ``run_json`` holds (a mapping with a text ``run`` and an integer ``step``),
    or None: a run that is no fork, or a reference damaged by hand (the run then reads as its own)."""
    ref = run_json.get(FIELD) if isinstance(run_json, dict) else None
    if not isinstance(ref, dict) or not isinstance(ref.get("run"), str):
        return None
    step = ref.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        return None
    return ForkRef(run=ref["run"], step=step)
