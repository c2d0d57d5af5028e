"""A team's dashboard serves its agents too: the MCP server (``agents.mcp_http``) at ``/mcp``, over
Streamable HTTP, behind the same door as the pages and the API.

Nothing here decides who may do what: ``ui.team`` has identified the request before it reaches
``/mcp`` (an agent brings a personal token, ``Authorization: Bearer``; nobody gets a 401), and the
tools of each call are built from what it left on the request: the person, their address and their
view of the store. Edits are offered unless the dashboard is read-only, and each needs the edit role
in the run's project, as the run page's own edits do. A request sent by another site's page (its
``Origin`` is not this server) is refused, as the dashboard's changes are.

The MCP SDK is an extra (``tunetrack[mcp]``, version 2 here): without it ``/mcp`` answers 501 saying
what to install, and the dashboard is served as ever.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..agents.mcp_http import MemberTools, asgi, http_server
from ..agents.mcp_server import Tools
from ..team.roles import Role

PATH = "/mcp"


class _Door:
    """The ASGI app at ``/mcp``: another site's page is refused, anything else goes to ``serve``."""

    def __init__(self, serve: ASGIApp) -> None:
        self.serve = serve

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        origin = request.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != request.headers.get("host", ""):
            answer = JSONResponse(
                {"detail": f"refused a request from another site's page (Origin: {origin})"}, 403
            )
            await answer(scope, receive, send)
            return
        await self.serve(scope, receive, send)


def install(app: FastAPI) -> None:
    """Route ``/mcp`` of ``app`` (a team's dashboard, its ``state`` set up) to the MCP server, and run
    the server's session manager for as long as the app runs (its lifespan)."""
    edits = not app.state.read_only

    def tools_for(request: Any) -> MemberTools:
        person: str = request.state.person
        return MemberTools(
            app.state.root,
            request.state.catalog,
            app.state.configs,
            # the team file as now edited (``ui.team`` applies edits to it without a restart)
            lambda project: request.app.state.team.roles.may(person, Role.EDIT, project),
            person,
            request.state.origin,
            allow_edits=edits,
        )

    try:
        server = http_server(tools_for, Tools(app.state.root, edits, catalog=app.state.catalog).names())
        serve, running = asgi(server)
    except ImportError as exc:  # no MCP SDK, or one too old: say what to install
        app.router.routes.append(Route(PATH, JSONResponse({"detail": str(exc)}, status_code=501)))
        return
    app.router.routes.append(Route(PATH, _Door(serve)))
    before = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with running(), before(app) as state:
            yield state

    app.router.lifespan_context = lifespan
