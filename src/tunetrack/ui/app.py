"""The dashboard server: a read-only JSON API over ``tunetrack.reader`` and three static pages.

Safe by default: the CLI binds 127.0.0.1; on any other address every request (pages, API, static
files) must carry the token (``?token=`` once, then a cookie; or ``Authorization: Bearer``). Pages
never run inline scripts (a Content-Security-Policy forbids them) and render user strings as text.
"""

from __future__ import annotations

import hmac
import mimetypes
import os
import secrets
import threading
from collections import OrderedDict
from html import escape
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import TypeAdapter

from ..config import MISSING, diff, text
from ..errors import TunetrackError
from ..metric_keys import LOSS_LIKE, loss_columns
from ..reader import Catalog, Run, Series, numeric_values, present, run_json, thin
from . import assets
from .report import filename, render

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
COOKIE = "tunetrack_token"
UPLOT_TYPES = {"js": "application/javascript", "css": "text/css"}


XAxis = Annotated[str, Query(pattern="^(step|time)$")]
#: the runs table to JSON as FastAPI writes a response (NaN and ±Inf as null), without validating it
ROWS = TypeAdapter(list[dict[str, Any]])


def _find(run: Run, key: str, node: str | None) -> Series | None:
    """A training metric (empty if never logged), or a system metric of one node (None if that node has none)."""
    return run.series(key) if node is None else run.system_series(key).get(node)


#: a cursor is ``rewinds << CURSOR_BITS | points``: opaque to clients, who send back what they got
CURSOR_BITS = 32


def _points(
    s: Series, x: str, width: int, start: float | None, end: float | None, cursor: int | None, rewinds: int
) -> dict[str, Any]:
    """What a chart draws: at most four points per pixel bucket (M4), or, with ``cursor`` (as the
    last answer returned it), only the points after it. The cursor also holds how many rewinds the run
    had: after a rewind the client's points are stale (hidden points may have been logged again, even
    as many as were hidden), so the answer is ``reset`` and the client starts over. A step where the
    key was logged as None is no point (``present``): a metric measured now and then draws its points
    joined. (NaN and ±Inf leave as null, a gap in the line: FastAPI serializes through pydantic, which
    writes them so.)"""
    rows, points = len(s), present(s)  # the cursor counts rows, None or not: the client has a prefix
    total = len(points)
    new_cursor = rewinds << CURSOR_BITS | rows
    if cursor is not None:
        seen, had = cursor >> CURSOR_BITS, cursor & ((1 << CURSOR_BITS) - 1)
        if cursor and (seen != rewinds or had > rows):  # 0: from the start, whatever happened
            return {"reset": True, "cursor": 0, "total": total, "x": [], "y": []}
        new = present(Series(s.steps[had:], s.values[had:], s.times[had:]))
        return {
            "reset": False,
            "cursor": new_cursor,
            "total": total,
            "x": (new.steps if x == "step" else new.times).tolist(),
            "y": numeric_values(new).tolist(),
        }
    xs, values = thin(
        points.steps if x == "step" else points.times, numeric_values(points), width, start, end
    )
    return {
        "total": total,
        "cursor": new_cursor,
        "downsampled": len(xs) < total,
        "x": xs.tolist(),
        "y": values.tolist(),
    }


def _differing(flats: list[dict[str, Any]]) -> list[tuple[str, list[str | None]]]:
    """(key, each run's value as text, None where absent) for every flat config key whose values differ
    (``config.diff``: the comparison ``tunetrack diff`` makes). Where the printed values would hide a
    difference (``0.0003`` against ``0.00030000000000000003``), the row shows them exact."""
    out = []
    for key, values in diff(flats):
        given = [v for v in values if v is not MISSING]
        show = text if len(set(map(text, given))) == len(set(map(repr, given))) else str
        out.append((key, [None if v is MISSING else show(v) for v in values]))
    return out


def create_app(root: str | os.PathLike[str] | None = None, token: str | None = None) -> FastAPI:
    app = FastAPI(title="tunetrack", version="1", summary="Read-only API over a tunetrack run store.")

    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Response:
        if token is not None:
            given = (
                request.query_params.get("token")
                or request.cookies.get(COOKIE)
                or request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            )
            if not given or not hmac.compare_digest(given.encode(), token.encode()):
                return JSONResponse({"detail": "a valid token is required"}, status_code=401)
        try:
            response = await call_next(request)
        except Exception as exc:  # never a bare 500: say what could not be read
            response = JSONResponse({"detail": f"could not read the store: {exc!r}"}, status_code=503)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        if not request.url.path.startswith("/api/"):
            # Pages and our scripts: asked again each time (a 304 while unchanged), so an upgrade is
            # seen at once. (uPlot's URLs name its content: cached for good.)
            response.headers.setdefault("Cache-Control", "no-cache")
        if token is not None and request.query_params.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    catalog = Catalog(root)

    def run_or_404(run_id: str) -> Run:
        try:
            return catalog.open(run_id)
        except TunetrackError as exc:
            raise HTTPException(404, str(exc)) from None

    # The runs table as JSON, by query, with the table's version it shows: a poll finds it unchanged
    # (a 304, or these bytes for another browser) without building and serializing 10,000 rows.
    listings: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
    listings_lock = threading.Lock()
    boot = secrets.token_hex(4)  # in the ETag: another server's (or a restarted one's) versions differ

    @app.get(
        "/api/runs",
        summary="Runs, newest first, with the last value of each metric key asked for",
        description="With an ETag: a request whose If-None-Match holds it is answered 304 while no run changed.",
        response_model=list[dict[str, Any]],
    )
    def runs(
        request: Request,
        project: str | None = None,
        state: str | None = None,
        key: Annotated[list[str] | None, Query(description="default: the loss-like keys")] = None,
    ) -> Response:
        version = catalog.refresh()
        headers = {"ETag": f'"{boot}-{version}"', "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == headers["ETag"]:
            return Response(status_code=304, headers=headers)
        query = request.url.query
        with listings_lock:
            shown, body = listings.get(query, (None, b""))
        if shown != version:
            shown_keys = LOSS_LIKE if key is None else key
            rows = catalog.rows(project=project, state=state, keys=shown_keys, refresh=False)
            body = ROWS.dump_json(rows)
            with listings_lock:
                listings[query] = (version, body)
                listings.move_to_end(query)
                while len(listings) > 8:  # queries (column choices) kept
                    listings.popitem(last=False)
        return Response(body, media_type="application/json", headers=headers)

    @app.get("/api/keys", summary="The metric keys the runs have last values of, and the loss-like ones")
    def keys() -> dict[str, list[str]]:
        every = catalog.keys()
        return {"keys": every, "default": loss_columns(every)}  # default: the runs table's columns

    @app.get("/api/runs/{run_id}", summary="One run: metadata, provenance, summary, config, keys, events")
    def run(run_id: str) -> dict[str, Any]:
        r = run_or_404(run_id)
        return {
            **run_json(r, detail=True),
            "summary": r.summary(),
            "flat_config": {k: text(v) for k, v in r.flat_config.items()},  # as the page prints them
            "keys": r.keys(),
            "system_keys": r.system_keys(),
            "nodes": r.nodes,
        }

    @app.get("/api/runs/{run_id}/series", summary="One metric, downsampled (M4) or new points since a cursor")
    def series(
        run_id: str,
        key: str,
        x: XAxis = "step",
        width: int = 1500,
        start: float | None = None,
        end: float | None = None,
        cursor: int | None = None,
        node: str | None = None,
    ) -> dict[str, Any]:
        r = run_or_404(run_id)
        found = _find(r, key, node or None)
        if found is None:
            raise HTTPException(404, f"no system metric {key!r} on {node!r}")
        return {"key": key, **_points(found, x, width, start, end, cursor, r.rewinds)}

    @app.get(
        "/api/series",
        summary="Many series in one request (every chart of a page): downsampled, or new points since each cursor",
        description="The lists ``key``, ``node`` and ``cursor`` are aligned (one entry per series; an empty "
        "``node`` is a training metric), and ``run`` has one id per series or one for all. Without ``key``: "
        "every training and system metric of the run(s). A run or node that cannot be read gives an entry "
        "with ``error`` instead of failing the whole request.",
    )
    def many(
        run: Annotated[list[str], Query()],
        key: Annotated[list[str] | None, Query()] = None,
        node: Annotated[list[str] | None, Query()] = None,
        cursor: Annotated[list[int] | None, Query()] = None,
        x: XAxis = "step",
        width: int = 1500,
        start: float | None = None,
        end: float | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        if key is None:
            if node or cursor:
                raise HTTPException(422, "node and cursor need the keys they belong to")
            specs = [(run_id, k, n) for run_id in run for k, n in _all_keys(run_id)]
        else:
            if (
                len(run) not in (1, len(key))
                or len(node or key) != len(key)
                or len(cursor or key) != len(key)
            ):
                raise HTTPException(422, "run, node and cursor must have one entry per key (or run just one)")
            specs = list(zip(run * len(key) if len(run) == 1 else run, key, node or [""] * len(key)))
        out = []
        for i, (run_id, k, n) in enumerate(specs):
            entry: dict[str, Any] = {"run": run_id, "key": k, "node": n or None}
            try:
                r = catalog.open(run_id)
                found = _find(r, k, n or None)
            except TunetrackError as exc:
                found, entry["error"] = None, str(exc)
            if found is not None:
                entry |= _points(found, x, width, start, end, cursor[i] if cursor else None, r.rewinds)
            elif "error" not in entry:
                entry["error"] = f"no system metric {k!r} on {n!r}"
            out.append(entry)
        return {"series": out}

    def _all_keys(run_id: str) -> list[tuple[str, str]]:
        try:
            r = catalog.open(run_id)
        except TunetrackError:
            return [("", "")]  # one entry, which then reports the run as missing
        return [(k, "") for k in r.keys()] + [(k, n) for n in r.nodes for k in r.system_keys()]

    @app.get("/api/compare", summary="Runs side by side: their metric keys, and the config keys that differ")
    def compare(id: Annotated[list[str], Query()]) -> dict[str, Any]:
        rs = [run_or_404(i) for i in id]
        flats = [r.flat_config for r in rs]
        return {
            "runs": [{"id": r.id, "name": r.name, "state": r.state, "keys": r.keys()} for r in rs],
            "rows": [{"key": k, "values": values} for k, values in _differing(flats)],
        }

    @app.get("/api/diff", summary="Config keys that differ between two runs")
    def diff(a: str, b: str) -> dict[str, Any]:
        ra, rb = run_or_404(a), run_or_404(b)
        rows = [{"key": k, "a": va, "b": vb} for k, (va, vb) in _differing([ra.flat_config, rb.flat_config])]
        return {"a": ra.id, "b": rb.id, "rows": rows}

    @app.get(
        "/api/report", summary="The runs as one self-contained HTML file (tunetrack report), to download"
    )
    def report(run: Annotated[list[str], Query()]) -> HTMLResponse:
        rs = [run_or_404(i) for i in run]
        return HTMLResponse(
            render(rs), headers={"Content-Disposition": f'attachment; filename="{filename(rs)}"'}
        )

    @app.get("/api/runs/{run_id}/media/{path:path}", summary="An image stored with the run")
    def media(run_id: str, path: str) -> Response:
        data = run_or_404(run_id).read_media(path)
        if data is None:
            raise HTTPException(404, "no such media file in this run")
        return Response(data, media_type=mimetypes.guess_type(path)[0] or "application/octet-stream")

    uplot_tag = assets.uplot_tag() if assets.uplot_built("ui", "the dashboard shows no charts") else None

    @app.get("/static/vendor/uplot-{tag}.min.{ext}", include_in_schema=False)
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

    app.mount("/static", StaticFiles(directory=assets.STATIC), name="static")

    # Without uPlot (built without npm) the chart pages load none: their scripts then say so where
    # the charts would be, and show everything else.
    links = {
        "<!--uplot.css-->": f'<link rel="stylesheet" href="/static/vendor/uplot-{uplot_tag}.min.css">',
        "<!--uplot.js-->": f'<script defer src="/static/vendor/uplot-{uplot_tag}.min.js"></script>',
    }
    for page, name in (("/", "index.html"), ("/run/{run_id}", "run.html"), ("/compare", "compare.html")):
        html = (assets.STATIC / name).read_text()
        for placeholder, link in links.items():
            html = html.replace(placeholder, link if uplot_tag is not None else "")
        app.add_api_route(page, _page(html), include_in_schema=False)
    return app


def _page(html: str) -> Any:
    def serve(request: Request) -> HTMLResponse:
        # The runs table's URL holds its columns (and the API takes the same query): the page
        # preloads its rows from "/api/runs<!--query-->", so they are on their way before its
        # script runs, and the script then asks for that very URL.
        query = request.url.query
        return HTMLResponse(html.replace("<!--query-->", escape(f"?{query}") if query else ""))

    return serve
