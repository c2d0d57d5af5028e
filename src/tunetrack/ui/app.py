"""The dashboard server: a read-only JSON API over ``tunetrack.reader`` and three static pages.

Safe by default: the CLI binds 127.0.0.1; on any other address every request (pages, API, static
files) must carry the token (``?token=`` once, then a cookie; or ``Authorization: Bearer``). Pages
never run inline scripts (a Content-Security-Policy forbids them) and render user strings as text.
"""

from __future__ import annotations

import hmac
import importlib.resources
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from ..errors import TunetrackError
from ..reader import Run, list_runs, open_run
from .downsample import m4

STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
COOKIE = "tunetrack_token"


def _json_safe(values: np.ndarray) -> list[Any]:
    """NaN and ±Inf have no JSON form: they travel as null (a gap in the line)."""
    out = values.tolist()
    return [None if isinstance(v, float) and not math.isfinite(v) else v for v in out]


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
        if token is not None and request.query_params.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    cache: dict[str, tuple[tuple, Run]] = {}

    def run_or_404(run_id: str) -> Run:
        """The run, parsed once while its files are unchanged (a page's charts share one parse)."""
        try:
            run = open_run(run_id, dir=root)
        except TunetrackError as exc:
            raise HTTPException(404, str(exc)) from None
        # Recheck at least every 5 s even without writes: a silent run turns ``crashed``.
        signature = (
            int(time.time() // 5),
            *sorted(
                (e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(run.path) if e.is_file()
            ),
        )
        hit = cache.get(run.id)
        if hit is not None and hit[0] == signature:
            return hit[1]
        if len(cache) > 64:
            cache.pop(next(iter(cache)))
        cache[run.id] = (signature, run)
        return run

    @app.get("/api/runs", summary="Runs, newest first")
    def runs(project: str | None = None, state: str | None = None) -> list[dict[str, Any]]:
        out = []
        for r in list_runs(root, project=project, state=state):
            loss = r.series("loss")
            out.append(
                {
                    "id": r.id,
                    "name": r.name,
                    "project": r.project,
                    "state": r.state,
                    "tags": r.tags,
                    "hosts": r.hosts,
                    "created": r.created,
                    "ended": r.ended,
                    "last_step": r.last_step,
                    "loss": _json_safe(loss.values[-1:])[0] if len(loss) else None,
                }
            )
        return out

    @app.get("/api/runs/{run_id}", summary="One run: metadata, config, keys, events")
    def run(run_id: str) -> dict[str, Any]:
        r = run_or_404(run_id)
        return {
            "id": r.id,
            "name": r.name,
            "project": r.project,
            "state": r.state,
            "tags": r.tags,
            "created": r.created,
            "ended": r.ended,
            "hosts": r.hosts,
            "error": r.error,
            "meta": r.meta,
            "config": r.config,
            "flat_config": {k: str(v) for k, v in r.flat_config.items()},
            "keys": r.keys(),
            "system_keys": r.system_keys(),
            "nodes": r.nodes,
            "events": r.events(),
            "last_step": r.last_step,
        }

    @app.get("/api/runs/{run_id}/series", summary="One metric, downsampled (M4) or new points since a cursor")
    def series(
        run_id: str,
        key: str,
        x: str = Query("step", pattern="^(step|time)$"),
        width: int = 1500,
        start: float | None = None,
        end: float | None = None,
        cursor: int | None = None,
        node: str | None = None,
    ) -> dict[str, Any]:
        r = run_or_404(run_id)
        if node is not None:
            s = r.system_series(key).get(node)
            if s is None:
                raise HTTPException(404, f"no system metric {key!r} on {node!r}")
        else:
            s = r.series(key)
        xs = s.steps if x == "step" else s.times
        total = len(s)
        if cursor is not None:  # live: only what is new; reset when a rewind hid earlier points
            if cursor > total:
                return {"key": key, "reset": True, "cursor": 0, "total": total, "x": [], "y": []}
            return {
                "key": key,
                "reset": False,
                "cursor": total,
                "total": total,
                "x": _json_safe(xs[cursor:]),
                "y": _json_safe(s.values[cursor:].astype(np.float64)),
            }
        values = (
            s.values.astype(np.float64)
            if s.values.dtype != object
            else np.array(
                [v if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan for v in s.values]
            )
        )
        order = np.argsort(xs, kind="stable") if total > 1 and np.any(np.diff(xs) < 0) else None
        if order is not None:
            xs, values = xs[order], values[order]
        idx = m4(xs, values, width, start, end)
        return {
            "key": key,
            "total": total,
            "cursor": total,
            "downsampled": len(idx) < total,
            "x": _json_safe(xs[idx]),
            "y": _json_safe(values[idx]),
        }

    @app.get("/api/diff", summary="Config keys that differ between two runs")
    def diff(a: str, b: str) -> dict[str, Any]:
        ra, rb = run_or_404(a), run_or_404(b)
        fa, fb = ra.flat_config, rb.flat_config
        rows = [
            {"key": k, "a": str(fa[k]) if k in fa else None, "b": str(fb[k]) if k in fb else None}
            for k in sorted(set(fa) | set(fb))
            if fa.get(k, ...) != fb.get(k, ...)
        ]
        return {"a": ra.id, "b": rb.id, "rows": rows}

    @app.get("/api/runs/{run_id}/media/{path:path}", summary="An image stored with the run")
    def media(run_id: str, path: str) -> FileResponse:
        r = run_or_404(run_id)
        base = (r.path / "media").resolve()
        target = (r.path / path).resolve()
        if not target.is_relative_to(base) or not target.is_file():
            raise HTTPException(404, "no such media file in this run")
        return FileResponse(target)

    @app.get("/static/vendor/plotly.min.js", include_in_schema=False)
    def plotly_js() -> FileResponse:
        return FileResponse(
            str(importlib.resources.files("plotly") / "package_data" / "plotly.min.js"),
            media_type="application/javascript",
        )

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    for page, name in (("/", "index.html"), ("/run/{run_id}", "run.html"), ("/compare", "compare.html")):
        app.add_api_route(page, _page(name), include_in_schema=False)
    return app


def _page(name: str) -> Any:
    def serve() -> FileResponse:
        return FileResponse(STATIC / name, media_type="text/html")

    return serve
