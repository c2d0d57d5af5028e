"""The dashboard served to a team (``tunetrack ui --team FILE``): who each request is, and what they may
see and change (``team.roles``).

Every request is someone before any route runs, or it gets no further: a personal token
(``Authorization: Bearer``, for scripts and agents), the identity header of a reverse proxy the team
file trusts (oauth2-proxy), or a signed session cookie begun by signing in (a token pasted into the
sign-in form, or the team's identity provider by OpenID Connect, ``ui.oidc``). A request with none is
sent to ``/signin`` (a page) or answered 401 (the API, and agents at ``/mcp``: ``ui.mcp_route``); an
identity header from an address the team file does not trust is refused outright. A token is never put in a URL, and a session begun with a
token ends when it is revoked or expires.

The request then reads through ``reader.visible.Visible``: runs of projects the person may not read
are never listed or opened, whatever the route. Changes ask ``allow`` for the role they need.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from .._warnings import warn_once
from ..reader.visible import Visible
from ..team.file import Team, load_team
from ..team.roles import Role
from ..team.tokens import Tokens
from . import assets, oidc
from .oidc import local_path

SESSION_COOKIE = "tunetrack_session"
#: what anyone may ask for before signing in: the ways to sign in, and the pages' own static files
PUBLIC = ("/signin", "/signout", "/static/", "/favicon.ico")

CallNext = Callable[[Request], Awaitable[Response]]


class Refused(Exception):
    """A request that says who it is, wrongly: a bad token, a header from an untrusted address."""


def install(app: FastAPI, team: Team) -> None:
    """Serve ``app`` to ``team``: the sign-in routes, the identity of every request, and its session.
    Called before the app's outermost middleware (``security.guard``) is added, so that every answer
    given here carries the security headers too."""
    from starlette.middleware.sessions import SessionMiddleware

    app.state.team = team
    app.state.team_seen = _signature(team.path)
    app.state.tokens = Tokens(team.tokens)
    app.include_router(_signin_router(team))
    if team.oidc is not None:
        o = team.oidc
        oidc.add_routes(app, o.issuer, o.client_id, o.client_secret, o.claim, sign_in=_begin("oidc"))
    app.middleware("http")(_identify)
    app.add_middleware(
        SessionMiddleware,
        secret_key=team.session_secret or secrets.token_urlsafe(32),
        session_cookie=SESSION_COOKIE,
        max_age=int(team.session_hours * 3600),
        same_site="lax",  # an identity provider's redirect back to us is a cross-site navigation
        https_only=team.secure_cookies,
    )


def _begin(via: str, token_id: str | None = None) -> Callable[[Request, str], None]:
    def sign_in(request: Request, person: str) -> None:
        request.session.clear()
        request.session.update({"person": person, "via": via, "token": token_id, "at": time.time()})

    return sign_in


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _roles_as_edited(app: FastAPI) -> None:
    """The team file's groups and rules read again when it changed, so access is given and taken
    away by editing it, with no restart (how people sign in is read at the start only). A file
    edited into a mistake leaves the last good rules in force, with one warning that says why."""
    team: Team = app.state.team
    seen = _signature(team.path)
    if seen is None or seen == app.state.team_seen:
        return
    app.state.team_seen = seen
    try:
        edited = load_team(team.path)
    except ValueError as exc:
        warn_once(f"team-file:{seen}", f"the team file was not applied, its last rules stay: {exc}")
        return
    app.state.team = replace(team, roles=edited.roles)


async def _identify(request: Request, call_next: CallNext) -> Response:
    path = request.url.path
    _roles_as_edited(request.app)
    try:
        person = _person(request)
    except Refused as exc:
        return JSONResponse({"detail": str(exc)}, status_code=401)
    if person is None:
        if path.startswith(PUBLIC):
            return await call_next(request)
        if request.method == "GET" and not path.startswith(("/api/", "/mcp")) and path != "/openapi.json":
            target = path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/signin?{urlencode({'next': target})}", status_code=303)
        return JSONResponse({"detail": "sign in first: a personal token, or /signin"}, status_code=401)
    team: Team = request.app.state.team
    request.state.person = person
    request.state.origin = _origin(request, team)
    request.state.catalog = Visible(
        request.app.state.catalog, lambda project: team.roles.may(person, Role.READ, project)
    )
    return await call_next(request)


def _person(request: Request) -> str | None:
    """Who sent ``request``: by token, by a trusted proxy's header, or by session; None: nobody yet."""
    team: Team = request.app.state.team
    tokens: Tokens = request.app.state.tokens
    bearer = request.headers.get("authorization", "")
    if bearer:
        scheme, _, text = bearer.partition(" ")
        token = tokens.check(text) if scheme.lower() == "bearer" else None
        if token is None:
            raise Refused("this token is not valid: unknown, revoked or expired")
        return token.person
    if team.proxy is not None:
        named = request.headers.get(team.proxy.header)
        peer = request.client.host if request.client else None
        if named is not None:
            if not team.proxy.trusts(peer):
                raise Refused(f"{team.proxy.header} is only trusted from the team's proxy, not from {peer}")
            return named.strip() or None
    session: dict[str, Any] = request.session
    person = session.get("person")
    if not isinstance(person, str):
        return None
    token_id = session.get("token")
    if token_id is not None:
        token = tokens.still_valid(str(token_id))
        if token is None or token.person != person:
            session.clear()  # the token it began with was revoked or expired
            return None
    return person


def _origin(request: Request, team: Team) -> str:
    """Where a change came from, for the audit trail: the client's address (as the trusted proxy saw
    it, where one is in front)."""
    peer = request.client.host if request.client else "?"
    forwarded = request.headers.get("x-forwarded-for")
    if team.proxy is not None and forwarded and team.proxy.trusts(peer):
        last = forwarded.split(",")[-1].strip()
        try:
            return str(ipaddress.ip_address(last))
        except ValueError:
            pass
    return peer


def person(request: Request) -> str | None:
    """Who sent ``request`` on a team's dashboard; None on a dashboard of one."""
    return getattr(request.state, "person", None)


def allow(request: Request, role: Role, project: str | None) -> None:
    """Refuse (403) a change ``request``'s person may not make in ``project`` (nothing to check on a
    dashboard of one: its guard already let the request in)."""
    who = person(request)
    if who is None:
        return
    team: Team = request.app.state.team
    if not team.roles.may(who, role, project):
        raise HTTPException(403, f"{who} may not {role.word} the runs of {project or 'runs in no project'!r}")


def may(request: Request, project: str | None) -> dict[str, bool]:
    """What the page may offer on a run of ``project``: ``edit`` and ``delete``."""
    who = person(request)
    if who is None:
        return {"edit": True, "delete": False}  # a dashboard of one stops runs; `tunetrack rm` deletes
    roles = request.app.state.team.roles
    return {"edit": roles.may(who, Role.EDIT, project), "delete": roles.may(who, Role.DELETE, project)}


# -- signing in -------------------------------------------------------------------------------------
def _signin_router(team: Team) -> APIRouter:
    page = (assets.STATIC / "signin.html").read_text()
    router = APIRouter(include_in_schema=False)

    def form(target: str, status: int = 200, problem: str = "") -> HTMLResponse:
        oidc = (
            f'<p><a class="button" href="/signin/oidc?{escape(urlencode({"next": target}))}">'
            "Sign in with the team's identity provider</a></p>"
            if team.oidc is not None
            else ""
        )
        html = (
            page.replace("<!--next-->", escape(target))
            .replace("<!--oidc-->", oidc)
            .replace("<!--problem-->", f'<p class="problem">{escape(problem)}</p>' if problem else "")
        )
        return HTMLResponse(html, status_code=status)

    @router.get("/signin")
    def signin_page(next: str = "/") -> HTMLResponse:
        return form(local_path(next))

    @router.post("/signin")
    async def signin(request: Request) -> Response:
        _same_site(request)
        fields = parse_qs((await request.body()).decode("utf-8", "replace"))
        target = local_path((fields.get("next") or ["/"])[0])
        token = request.app.state.tokens.check((fields.get("token") or [""])[0])
        if token is None:
            return form(target, 401, "That token is not valid: unknown, revoked or expired.")
        _begin("token", token.id)(request, token.person)
        return RedirectResponse(target, status_code=303)

    @router.post("/signout")
    def signout(request: Request) -> Response:
        _same_site(request)
        request.session.clear()
        return RedirectResponse("/signin", status_code=303)

    return router


def _same_site(request: Request) -> None:
    """A sign-in or sign-out posted by another site's page (login cross-site request forgery) is refused."""
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise HTTPException(403, f"refused a sign-in posted by another site's page (Origin: {origin})")
