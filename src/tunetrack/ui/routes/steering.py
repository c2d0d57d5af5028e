"""What the dashboard changes: a live run asked to stop (the run page's Stop button, as ``tunetrack
stop`` asks: ``manage.stop_run``), and what this server allows (``GET /api/server``: a page hides what
a read-only server would refuse). Every route that changes the store depends on ``security.writable``,
which refuses it on a read-only server and from another site's page."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from pydantic import BaseModel

from ...errors import RunNotRunning, TunetrackError, one_line
from ...manage import stop_run
from ...team.roles import Role
from .. import security, team
from .deps import CatalogDep, open_or_404

router = APIRouter()


class StopRequest(BaseModel):
    """The body of ``POST /api/runs/{run}/stop``."""

    reason: str = ""


@router.get(
    "/api/server", summary="What this server allows: read_only, when it changes nothing; who is signed in"
)
def server(request: Request) -> dict[str, Any]:
    return {"read_only": request.app.state.read_only, "person": team.person(request)}


@router.post(
    "/api/runs/{run_id}/stop",
    summary="Ask a live run to stop (as tunetrack stop does); who asked: the dashboard and the client's address",
    description="A JSON body, from this server's own pages only (Content-Type: application/json; an Origin "
    "that is not this server's is a 403); 403 on a read-only server; 404: no such run; 409: it is not "
    "running. Answers the run's id, name, state and the stop request (the first one counts).",
    dependencies=[Depends(security.writable)],
)
def stop(run_id: str, body: StopRequest, request: Request, catalog: CatalogDep) -> dict[str, Any]:
    person = team.person(request)
    if person is not None:  # a team's dashboard: the member, if the team file lets them edit the run
        run = open_or_404(catalog, run_id)
        team.allow(request, Role.EDIT, run.project)
        who, origin = person, getattr(request.state, "origin", None)
    else:  # who asked, as the run's state will say it: the address tells one browser from another
        who, origin = (f"dashboard ({request.client.host})" if request.client else "dashboard"), None
    try:
        r = stop_run(run_id, body.reason, dir=request.app.state.root, by=who, origin=origin)
    except RunNotRunning as exc:
        raise HTTPException(409, one_line(exc)) from None
    except TunetrackError as exc:  # no such run, or a prefix several runs share
        raise HTTPException(404, one_line(exc)) from None
    except ValueError as exc:  # a reason of several lines
        raise HTTPException(422, one_line(exc)) from None
    return {"id": r.id, "name": r.name, "state": r.state, "stop": r.stop_request}
