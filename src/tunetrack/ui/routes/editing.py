"""The changes a page can make to a run besides stopping it (``steering``): rename, tag, note, and, on
a team's dashboard for those the team file lets, delete; and what was changed, by whom and from where
(``reader.audit``: the run page's History). Each change is the one ``tunetrack
rename``/``tag``/``note``/``rm`` makes, recorded with the person and their address."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel

from ...errors import RunInUse, TunetrackError, one_line
from ...manage.runs import delete_runs, edit_run
from ...reader.audit import run_trail
from ...team.roles import Role
from .. import security, team
from .deps import CatalogDep, open_or_404

router = APIRouter()


class EditRequest(BaseModel):
    """The body of ``POST /api/runs/{run}/edit``: any of a new name, tags to add and remove, a note."""

    name: str | None = None
    add: list[str] = []
    remove: list[str] = []
    note: str | None = None


def _who(request: Request) -> tuple[str, str]:
    """Who makes a change and from where: the team member, or the dashboard of one (its client's address)."""
    origin = getattr(request.state, "origin", None) or (request.client.host if request.client else "?")
    return team.person(request) or "dashboard", origin


@router.post(
    "/api/runs/{run_id}/edit",
    summary="Rename, tag or note a run (as tunetrack rename, tag and note do); who and from where are recorded",
    description="A JSON body, from this server's own pages only; 403 on a read-only server or for a team "
    "member who may not edit the run's project; 422: nothing to change, or a name or tag that is not one.",
    dependencies=[Depends(security.writable)],
)
def edit(run_id: str, body: EditRequest, request: Request, catalog: CatalogDep) -> dict[str, Any]:
    run = open_or_404(catalog, run_id)
    team.allow(request, Role.EDIT, run.project)
    by, origin = _who(request)
    try:
        r = edit_run(
            run.id,
            request.app.state.root,
            name=body.name,
            add=body.add,
            remove=body.remove,
            note=body.note,
            by=by,
            origin=origin,
        )
    except ValueError as exc:
        raise HTTPException(422, one_line(exc)) from None
    return {"id": r.id, "name": r.name, "tags": r.tags, "notes": r.notes}


@router.post(
    "/api/runs/{run_id}/delete",
    summary="Delete a run (as tunetrack rm does), on a team's dashboard, for those the team file lets",
    description="A JSON body, from this server's own pages only; 403 on a dashboard of one (tunetrack rm "
    "deletes there), on a read-only server, or for a member who may not delete in the run's project; 409: "
    "the run is still running, or has forks. The deletion is recorded (who, from where, what the run was).",
    dependencies=[Depends(security.writable)],
)
def delete(run_id: str, request: Request, catalog: CatalogDep) -> dict[str, Any]:
    run = open_or_404(catalog, run_id)
    if team.person(request) is None:
        raise HTTPException(403, "this dashboard deletes no runs: tunetrack rm does (or a team's, --team)")
    team.allow(request, Role.DELETE, run.project)
    by, origin = _who(request)
    try:
        gone = delete_runs([run.id], request.app.state.root, by=by, origin=origin)
    except RunInUse as exc:
        raise HTTPException(409, one_line(exc)) from None
    except TunetrackError as exc:
        raise HTTPException(404, one_line(exc)) from None
    return {"deleted": [r.id for r in gone]}


@router.get("/api/runs/{run_id}/history", summary="Who changed the run, when, from where, and what")
def history(run_id: str, request: Request, catalog: CatalogDep) -> dict[str, Any]:
    """The run's audit trail (``reader.audit``), oldest first, and what this person may change of it."""
    run = open_or_404(catalog, run_id)
    return {"entries": [e.as_dict() for e in run_trail(run)], "may": team.may(request, run.project)}
