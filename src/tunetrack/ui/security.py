"""The dashboard's guard, around every request (pages, API, static files): the token where the server
asks for one, and the headers that keep a page from running anything but our own scripts.

Safe by default: the CLI binds 127.0.0.1; on any other address every request must carry the token
(``?token=`` once, then a cookie; or ``Authorization: Bearer``). Pages never run inline scripts (the
Content-Security-Policy forbids them) and render user strings as text.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from fastapi import Request
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
        if not request.url.path.startswith("/api/"):
            # Pages and our scripts: asked again each time (a 304 while unchanged), so an upgrade is
            # seen at once. (uPlot's URLs name its content: cached for good.)
            response.headers.setdefault("Cache-Control", "no-cache")
        if token is not None and request.query_params.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response

    return middleware
