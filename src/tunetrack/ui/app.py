"""The dashboard server: a JSON API over ``tunetrack.reader`` and the static pages. It reads; its
changes are asking a live run to stop (``routes.steering``) and a run's name, tags, notes and, for a
team, its deletion (``routes.editing``), which ``read_only`` turns off. Served to a team (``team``),
every request is someone, who sees and changes only what the team file lets them (``ui.team``).

``create_app`` only assembles: the guard around every request (``security``: the token, the
Content-Security-Policy), the routes by topic (``routes``), which reach the store's ``Catalog`` through
a dependency (``routes.deps``), and the static files.
"""

from __future__ import annotations

import os
import threading

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

from ..errors import NotVisible, one_line
from ..reader import Catalog
from ..reader.sweeps import Configs
from ..team.file import Team
from . import assets, security
from .routes import (
    compare,
    distributions,
    editing,
    families,
    media,
    pages,
    produced,
    runs,
    samples,
    steering,
    sweeps,
)


def create_app(
    root: str | os.PathLike[str] | None = None,
    token: str | None = None,
    read_only: bool = False,
    team: Team | None = None,
) -> FastAPI:
    """The app over the store at ``root``; with ``token``, every request must carry it; ``read_only``:
    every change is refused (and the pages offer none); ``team``: served to a team (``ui.team``:
    each request someone, who sees and changes only what the team file lets them)."""
    app = FastAPI(
        title="tunetrack",
        version="1",
        summary="API over a tunetrack run store: it reads, and stops live runs.",
    )
    if team is not None:
        from . import team as for_team

        for_team.install(app, team)
    app.middleware("http")(security.guard(token))  # added last: outermost, its headers on every answer
    app.exception_handler(NotVisible)(_not_visible)
    app.state.read_only = read_only
    # whether requests say who sent them (``security.writable``): a token, or a team member
    app.state.with_token = token is not None or team is not None
    app.state.catalog = Catalog(root)
    app.state.listings = runs.Listings()
    app.state.configs = Configs()  # each run's config, read once (a sweep's groups and axes)
    app.state.root = root  # the artifacts beside the runs are read from it (``routes.produced``)
    app.state.lineages = produced.Lineages()  # the store's lineage graph, built once per version
    if team is not None:
        from . import mcp_route

        mcp_route.install(app)  # its agents: the MCP server at /mcp, as each person may use it
    for topic in (
        runs,
        distributions,
        families,
        compare,
        media,
        samples,
        sweeps,
        produced,
        steering,
        editing,
    ):
        app.include_router(topic.router)
    uplot_tag = assets.uplot_tag() if assets.uplot_built("ui", "the dashboard shows no charts") else None
    app.include_router(pages.router(uplot_tag))  # before /static: it serves uPlot under /static/vendor/
    app.mount("/static", StaticFiles(directory=assets.STATIC), name="static")
    return app


async def _not_visible(request: Request, exc: Exception) -> JSONResponse:
    """A run of a project the team member may not read, whichever route asked for it: a 403."""
    return JSONResponse({"detail": one_line(exc)}, status_code=403)


def warm(app: FastAPI) -> threading.Thread:
    """Starts building what a browser's first look asks for (``routes.runs.warm``) on a thread, so
    that a fresh ``tunetrack ui`` over 10,000 runs answers its first page from memory."""
    thread = threading.Thread(
        target=runs.warm, args=(app.state.catalog, app.state.listings), name="tunetrack-ui-warm", daemon=True
    )
    thread.start()
    return thread
