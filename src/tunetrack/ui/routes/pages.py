"""The HTML pages (runs table, run, compare, artifacts) and uPlot under URLs that name its content."""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse

from ...errors import NotVisible, RunNotFound
from ...metric_keys import LOSS_LIKE
from .. import assets
from .deps import CatalogDep
from .runs import NEWEST

UPLOT_TYPES = {"js": "application/javascript", "css": "text/css"}
#: what the runs listing (GET /api/runs) takes of a page's query
LISTING = ("project", "state", "key", "best")
PAGES = {
    "/": "index.html",
    "/run/{run_id}": "run.html",
    "/compare": "compare.html",
    "/artifacts": "artifacts.html",
}


def router(uplot_tag: str | None) -> APIRouter:
    """The pages, linking uPlot by ``uplot_tag`` (``assets.uplot_tag``); None: a build without uPlot,
    whose chart pages then load none (their scripts say so where the charts would be, and show
    everything else). The pages are read once, here."""
    pages = APIRouter(include_in_schema=False)

    @pages.get("/static/vendor/uplot-{tag}.min.{ext}")
    def uplot(tag: str, ext: str) -> FileResponse:
        """uPlot under URLs that name its content: the browser keeps it without asking again (no round
        trip before a chart page can draw), and a new build gets new URLs."""
        if tag != uplot_tag or ext not in UPLOT_TYPES:
            raise HTTPException(404, "not this server's uPlot")
        return FileResponse(
            assets.UPLOT_JS if ext == "js" else assets.UPLOT_CSS,
            media_type=UPLOT_TYPES[ext],
            headers={"Cache-Control": "public, max-age=31536000, immutable"},
        )

    links = {
        "<!--uplot.css-->": f'<link rel="stylesheet" href="/static/vendor/uplot-{uplot_tag}.min.css">',
        "<!--uplot.js-->": f'<script defer src="/static/vendor/uplot-{uplot_tag}.min.js"></script>',
    }
    for path, name in PAGES.items():
        # the runs table's default columns are the loss-like keys its runs have, in this order: the
        # page picks them from its rows (``metric_keys.loss_columns``) rather than wait for /api/keys
        html = (assets.STATIC / name).read_text().replace("<!--loss-like-->", escape(json.dumps(LOSS_LIKE)))
        for placeholder, link in links.items():
            html = html.replace(placeholder, link if uplot_tag is not None else "")
        pages.add_api_route(path, _run_page(html) if path == "/run/{run_id}" else _page(html))
    return pages


def first_screen(params: Any) -> list[tuple[str, str]]:
    """``newest`` where the runs page asks for its first screen before the whole table (runs.js
    ``firstScreen``): the table newest first, and nothing that needs every run."""
    every = any(k in params for k in ("where", "group", "brush"))
    return [] if every or params.get("sort", "created:desc") != "created:desc" else [("newest", str(NEWEST))]


def _page(html: str) -> Callable[[Request], HTMLResponse]:
    def serve(request: Request) -> HTMLResponse:
        # The runs table's URL holds its columns (and the API takes the same query): the page
        # preloads its rows from "/api/runs<!--query-->", so they are on their way before its
        # script runs, and the script then asks for that very URL.
        # Only the listing's own parameters: the page's other choices (sort, filter, groups) are
        # applied to the rows it has, and the rows of one set of columns are one cached body.
        listing = [(k, v) for k, v in request.query_params.multi_items() if k in LISTING]
        query = urlencode([("format", "table"), *listing, *first_screen(request.query_params)])
        return HTMLResponse(html.replace("<!--query-->", escape(f"?{query}")))

    return serve


def _run_page(html: str) -> Callable[[str, CatalogDep], HTMLResponse]:
    """The run page, answered 404 for a run that is not there, 403 for one a team member may not read
    (its script then says so, and shows nothing else). Its first request (the run, its families of
    keys folded) is named in the page, so the browser asks for it while it loads the scripts: the
    URL is the one the script builds (``encodeURIComponent``'s escaping), else the answer goes unused."""

    def serve(run_id: str, catalog: CatalogDep) -> HTMLResponse:
        page = html.replace("<!--run-->", escape(quote(run_id, safe="!'()*~")))
        try:
            catalog.open(run_id)
        except RunNotFound:
            return HTMLResponse(page, status_code=404)
        except NotVisible:
            return HTMLResponse(page, status_code=403)
        return HTMLResponse(page)

    return serve
