"""Sign-in to the team dashboard through the team's own identity provider (OpenID Connect), so people
sign in with the account they already have instead of a password this server would have to keep.

``add_routes`` adds two routes: ``/signin/oidc`` sends the browser to the provider (the authorization
code flow with PKCE, a state and a nonce, all kept in the signed session cookie by Authlib), and
``/signin/oidc/callback`` takes the browser back: the code is exchanged, the ID token's signature,
issuer, audience, expiry and nonce are checked (by Authlib; a token answer without an ID token is
refused, so the check cannot be skipped), the person is read from one claim, and ``sign_in`` is told
who it is. Whatever goes wrong there (the person cancelled, a forged or stale state, the provider
down, no such claim) ends on a 401 or 403 page with one line saying so: never a 500, and never the
code or a token in the page, in a URL or in the log.

Authlib (with httpx2, its HTTP client; it falls back to httpx, deprecated) is the ``team`` extra: it
is imported by ``add_routes``, never when tunetrack or the dashboard is imported, so a dashboard
without team mode needs none of it.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from html import escape
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

log = logging.getLogger(__name__)

#: the client's name in Authlib's registry: its pending sign-ins are the session's ``_state_oidc_*`` keys
NAME = "oidc"
#: the scope that asks a provider for a standard claim (OpenID Connect Core 5.4); other claims are
#: asked for with ``scope=``
SCOPE_OF = {
    "email": "email",
    "preferred_username": "profile",
    "name": "profile",
    "nickname": "profile",
    "phone_number": "phone",
}


class Refused(Exception):
    """A sign-in that ends on a refusal page: its status and the one line the person reads."""

    def __init__(self, status: int, line: str) -> None:
        super().__init__(line)
        self.status = status
        self.line = line


def local_path(target: str | None) -> str:
    """``target`` if it is a path on this server, else ``/``: the page to land on after signing in
    comes from the URL, so anything a browser could read as another site (``//host``, ``/\\host``,
    a scheme, a tab or newline it would drop) would make our sign-in an open redirect."""
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    if "\\" in target or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "/"
    return target


def scope_for(claim: str) -> str:
    """The scopes to ask for: ``openid``, and the one that brings ``claim`` (none for ``sub``)."""
    extra = SCOPE_OF.get(claim)
    return "openid" if extra is None else f"openid {extra}"


def person_from(claims: dict[str, Any], claim: str) -> str | None:
    """Who ``claims`` say the person is, by ``claim``; None where they do not say. An email the
    provider says it has not verified names no one: anybody can type an address at most providers."""
    value = claims.get(claim)
    if not isinstance(value, str) or not value.strip():
        return None
    if claim == "email" and str(claims.get("email_verified", True)).lower() == "false":
        raise Refused(
            403, "Your email address is not verified at the identity provider: verify it there first."
        )
    return value.strip()


def refusal(status: int, line: str) -> Response:
    """The page a failed sign-in ends on: one line, no code, no token, not cached, and no Referer
    sent from it (the callback's URL held the code)."""
    body = (
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>Sign-in refused</title>'
        f'<p>{escape(line)}</p><p><a href="/signin/oidc">Sign in again</a></p></html>'
    )
    return HTMLResponse(body, status_code=status, headers=_PRIVATE)


_PRIVATE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def add_routes(
    app: FastAPI,
    issuer: str,
    client_id: str,
    client_secret: str,
    claim: str,
    sign_in: Callable[[Request, str], None],
    *,
    scope: str | None = None,
) -> None:
    """``GET /signin/oidc?next=/path`` and ``GET /signin/oidc/callback`` on ``app``, for the provider at
    ``issuer`` (discovered at ``issuer/.well-known/openid-configuration``), as the confidential client
    ``client_id``; the person is the ``claim`` claim of the ID token (or, where a provider keeps it
    out of the ID token, of its userinfo answer for the same ``sub``); ``sign_in(request, person)``
    records them (it may raise ``PermissionError`` for a person it does not admit: a 403). ``app``
    must have Starlette's ``SessionMiddleware``: the pending sign-in is kept in its cookie.
    ``scope``: what to ask for, where ``claim`` is not a standard claim (``scope_for``)."""
    from authlib.integrations.starlette_client import OAuth, OAuthError

    unreachable = transport_errors()
    # ... or a discovery document that is not JSON
    unreadable: tuple[type[Exception], ...] = (*unreachable, ValueError)

    issuer = issuer.rstrip("/")
    oauth = OAuth()
    client: Any = oauth.register(
        NAME,
        client_id=client_id,
        client_secret=client_secret,
        server_metadata_url=f"{issuer}/.well-known/openid-configuration",
        client_kwargs={"scope": scope or scope_for(claim), "code_challenge_method": "S256"},
    )

    async def discovered() -> dict[str, Any]:
        """The provider's metadata (read once, then kept); a document that names another issuer
        is refused (OpenID Connect Discovery 4.3: else a provider could speak for another)."""
        try:
            metadata: dict[str, Any] = await client.load_server_metadata()
        except unreadable as exc:
            raise _unreachable(issuer, exc) from None
        if str(metadata.get("issuer", "")).rstrip("/") != issuer:
            client.server_metadata.pop("_loaded_at", None)  # read it again next time
            log.warning(
                "OpenID Connect: %s's discovery document names issuer %r", issuer, metadata.get("issuer")
            )
            raise Refused(401, "The identity provider's configuration names another issuer: sign-in is off.")
        return metadata

    async def signin(request: Request, next: str = "/") -> Response:
        """Off to the provider, the pending sign-in (state, nonce, PKCE verifier, where to land)
        kept in the session under its state."""
        try:
            await discovered()
            redirect_uri = str(request.url_for("oidc_callback"))
            pending = await client.create_authorization_url(redirect_uri)
        except Refused as refused:
            return refusal(refused.status, refused.line)
        await client.save_authorize_data(request, redirect_uri=redirect_uri, next=local_path(next), **pending)
        return RedirectResponse(pending["url"], status_code=302, headers=_PRIVATE)

    async def callback(request: Request) -> Response:
        """Back from the provider: the person signed in and sent on, or one line saying why not."""
        state = request.query_params.get("state")
        pending = await client.framework.get_state_data(request.session, state) if state else None
        target = local_path(pending.get("next")) if pending else "/"
        try:
            person = await identify(request)
            try:
                sign_in(request, person)
            except PermissionError:
                raise Refused(403, f"{person} may not use this dashboard.") from None
        except Refused as refused:
            return refusal(refused.status, refused.line)
        return RedirectResponse(target, status_code=303, headers=_PRIVATE)

    async def identify(request: Request) -> str:
        """The code exchanged and the ID token checked, by Authlib; the person it names."""
        metadata = await discovered()
        iss = request.query_params.get("iss")  # RFC 9207: which provider sent the browser back
        if iss is not None and iss.rstrip("/") != issuer:
            raise Refused(401, "The answer came from another identity provider than this dashboard's.")
        options = {"iss": {"essential": True, "value": metadata["issuer"]}}
        try:
            token = await client.authorize_access_token(request, claims_options=options)
        except OAuthError as exc:
            raise Refused(*_oauth_refusal(exc.error)) from None
        except unreachable as exc:
            raise _unreachable(issuer, exc) from None
        except Exception as exc:  # a bad signature, audience, nonce, expiry: the token is not believed
            log.warning("OpenID Connect: an ID token from %s was refused: %s", issuer, type(exc).__name__)
            raise Refused(
                401, "The identity provider's answer could not be verified: sign in again."
            ) from None
        claims = token.get("userinfo")  # the checked ID token's claims; absent where there was no ID token
        if not claims:
            raise Refused(401, "The identity provider sent no ID token: sign-in needs OpenID Connect.")
        person = person_from(claims, claim)
        if person is None and metadata.get("userinfo_endpoint"):
            person = await from_userinfo(token, claims["sub"])
        if person is None:
            raise Refused(403, f"The identity provider did not say who you are (no {claim!r} claim).")
        return person

    async def from_userinfo(token: dict[str, Any], sub: str) -> str | None:
        """The claim from the userinfo endpoint, where a provider keeps it out of the ID token (a
        conforming one does, when the code flow's access token can fetch it); only if its ``sub``
        is the ID token's (OpenID Connect Core 5.3.2)."""
        try:
            info = await client.userinfo(token=token)
        except unreachable as exc:
            raise _unreachable(issuer, exc) from None
        if info.get("sub") != sub:
            raise Refused(401, "The identity provider's answers disagree about who you are.")
        return person_from(info, claim)

    app.add_api_route("/signin/oidc", signin, methods=["GET"], include_in_schema=False)
    app.add_api_route(
        "/signin/oidc/callback", callback, methods=["GET"], name="oidc_callback", include_in_schema=False
    )


def _unreachable(issuer: str, exc: Exception) -> Refused:
    """The refusal for a provider that did not answer, or answered an HTTP error; the log says which
    (by the error's type only: a message could hold a URL with a code in it)."""
    log.warning("OpenID Connect: the provider at %s could not be reached: %s", issuer, type(exc).__name__)
    return Refused(401, "The identity provider could not be reached: try again later.")


def transport_errors() -> tuple[type[Exception], ...]:
    """What Authlib's HTTP client raises when the provider cannot be reached or answers an error:
    httpx2's errors, or httpx's where Authlib falls back to it (whichever are installed)."""
    found = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).HTTPError)
        except ImportError:
            continue
    return tuple(found)


def _oauth_refusal(error: str | None) -> tuple[int, str]:
    """What an OAuth error from the callback means to the person: the provider's own description is
    never shown (anyone can put words in a callback URL's query)."""
    if error == "access_denied":
        return 403, "Sign-in was cancelled or refused at the identity provider."
    if error == "mismatching_state":
        return 403, "This sign-in was not started in this browser (or it expired): sign in again."
    return 401, "The identity provider did not confirm who you are: sign in again."
