"""What the routes share: the store's ``Catalog`` (one per app, kept on ``app.state``), handed to a
route as a FastAPI dependency, and opening a run by reference as a 404 when there is none."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from ...errors import TunetrackError, one_line
from ...reader import Catalog, Run


def _catalog(request: Request) -> Catalog:
    """The app's catalog, or on a team's dashboard the one the request's person reads through
    (``reader.visible.Visible``, set by ``ui.team``)."""
    return getattr(request.state, "catalog", None) or request.app.state.catalog


#: a route's parameter of this type gets the app's catalog (a team member's view of it)
CatalogDep = Annotated[Catalog, Depends(_catalog)]


def open_or_404(catalog: Catalog, ref: str) -> Run:
    """The run ``ref`` names (id, unique prefix or name); a 404 that says why if none."""
    try:
        return catalog.open(ref)
    except TunetrackError as exc:
        raise HTTPException(404, one_line(exc)) from None
