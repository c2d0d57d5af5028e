"""A catalog as one member of a team may read it: only the runs of the projects they may read.

The dashboard's routes read through a ``Catalog`` (``open``, ``rows``, ``keys``); handing each request
a ``Visible`` one instead puts the team's decision in one place, so a route written later cannot
forget it: a run outside the person's projects is never opened (``errors.NotVisible``, a 403) and
never listed, and no key, name or id of one reaches them through a listing.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..errors import NotVisible
from .catalog import Catalog, Visibility
from .find import named, only
from .run import Run


class Visible:
    """``catalog`` seen through ``may_read`` (a project, or None for a run in none, → whether it shows)."""

    def __init__(self, catalog: Catalog, may_read: Visibility) -> None:
        self.catalog = catalog
        self.may_read = may_read
        self.store = catalog.store

    def open(self, ref: str) -> Run:
        """The run ``ref`` names among those this reader sees: a name or id prefix that a hidden run
        shares names the visible one, and the errors (no such run, did you mean, several match) name
        visible runs only. A ref that only hidden runs answer to is refused, not even with its
        project's name: that too is what the person may not read."""
        if not ref:
            return self.catalog.open(ref)  # the error an empty ref gets
        found = named(self.store, ref)
        shown = [run for run in found if self.may_read(run.project)]
        if found and not shown:
            raise NotVisible("you may not read this run: the team file gives you no role in its project")
        run = only(self.store, ref, shown, lambda: [row["name"] for row in self.rows(keys=())])
        return self.catalog.open(run.id)

    def rows(self, *args: Any, **options: Any) -> list[dict[str, Any]]:
        """``Catalog.rows``, of the runs this reader may see."""
        return self.catalog.rows(*args, visible=self.may_read, **options)

    def newest(self, *args: Any, **options: Any) -> list[dict[str, Any]]:
        """``Catalog.newest``, of the runs this reader may see."""
        return self.catalog.newest(*args, visible=self.may_read, **options)

    def hides(self, run_id: str) -> bool:
        """Whether ``run_id`` is a run of the store this reader may not see (a run the store no longer
        holds is not: its id is all that is left of it): what a page of a run they may read leaves out
        of the forks made of it."""
        held, project = self.catalog.project_of(run_id)
        return held and not self.may_read(project)

    def keys(self) -> list[str]:
        return self.catalog.keys(self.may_read)

    def refresh(self, share: bool = False) -> int:
        return self.catalog.refresh(share)

    @property
    def version(self) -> int:
        return self.catalog.version

    def scope(self) -> str:
        """A short name of what this reader sees (the projects it may read of those there are), so
        that answers kept for one person serve everyone who sees the same runs."""
        there = self.catalog.projects()
        shown = sorted(repr(p) for p in there if self.may_read(p))  # may_read: kept per pair
        if len(shown) == len(there):
            return ""  # every run: the answers kept for a dashboard of one (those it builds as it starts)
        return hashlib.sha256("\n".join(shown).encode()).hexdigest()[:16]
