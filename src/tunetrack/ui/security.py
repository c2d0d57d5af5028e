"""The dashboard's guard, around every request (pages, API, static files): the token where the server
asks for one, and the headers that keep a page from running anything but our own scripts; and, for
the few requests that change the store (``writable``), the checks that keep another site's page from
sending them through a user's browser.

Safe by default: the CLI binds 127.0.0.1; on any other address every request must carry the token
(``?token=`` once, then a cookie; or ``Authorization: Bearer``). Pages never run inline scripts (the
Content-Security-Policy forbids them) and render user strings as text.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse, Response

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
COOKIE = "tunetrack_token"

CallNext = Callable[[Request], Awaitable[Response]]


def guard(token: str | None) -> Callable[[Request, CallNext], Awaitable[Response]]:
    """An HTTP middleware: with a ``token``, a request without it is a 401 (and one that brings it in
    the query gets it back as a cookie, for the page's own requests); every answer carries the
    security headers; an error while reading the store is a 503 that says what failed, never a bare 500."""

    async def middleware(request: Request, call_next: CallNext) -> Response:
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
        response.headers["X-Frame-Options"] = "DENY"  # frame-ancestors' older name: no clickjacking
        response.headers["Referrer-Policy"] = "same-origin"  # a run's URL never sent to another site
        if not request.url.path.startswith("/api/"):
            # Pages and our scripts: asked again each time (a 304 while unchanged), so an upgrade is
            # seen at once. (uPlot's URLs name its content: cached for good.)
            response.headers.setdefault("Cache-Control", "no-cache")
        if token is not None and request.query_params.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    return middleware


def writable(request: Request) -> None:
    """A dependency of every route that changes the store: refused (403) on a server started
    ``--read-only``, and refused to a page of another site (cross-site request forgery). Such a page
    can make the browser post a form to us, but not with ``Content-Type: application/json`` without
    asking first (a CORS preflight, which this server never allows): anything else is a 415. A request
    whose ``Origin`` is not this server is a 403. Without a token the server is on the loopback only,
    so a ``Host`` that is not a loopback name is a page whose name was pointed at this machine (DNS
    rebinding: its Origin and Host agree): a 403 too."""
    state = request.app.state
    if state.read_only:
        raise HTTPException(403, "this dashboard is read-only (tunetrack ui --read-only): it changes nothing")
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != host:
        raise HTTPException(403, f"refused a change asked by another site's page (Origin: {origin})")
    if not state.with_token and not _loopback(urlsplit(f"//{host}").hostname or ""):
        raise HTTPException(
            403, f"refused a change sent to {host!r}: without --token, changes come from this machine only"
        )
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise HTTPException(415, "a change is sent as JSON (Content-Type: application/json)")


def _loopback(name: str) -> bool:
    """Whether a host name is this machine's loopback: ``localhost``, ``127.0.0.1``, ``::1``."""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
