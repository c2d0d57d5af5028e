"""OpenID Connect sign-in (``tunetrack.ui.oidc``) against a real provider, panva's oidc-provider in Node
(``identity_provider.py``), in Chromium: the whole flow with its login and consent pages, a callback
whose state this browser never issued, a ``next`` that points off-site, and a person who cancels."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI, Request
from identity_provider import AppServer, Provider
from starlette.middleware.sessions import SessionMiddleware

from support.helpers import free_port, run_script
from tunetrack.ui import oidc

CLIENT_ID = "tunetrack-dashboard"
CLIENT_SECRET = secrets.token_urlsafe(32)


def make_app(issuer: str, claim: str = "email") -> FastAPI:
    """The team dashboard's part in small: a signed session cookie, the sign-in routes, and a page
    that says who the session is; ``mallory@example.test`` is not on the team."""
    app = FastAPI()
    app.add_middleware(SessionMiddleware, secret_key=secrets.token_urlsafe(32), same_site="lax")

    def sign_in(request: Request, person: str) -> None:
        if person == "mallory@example.test":
            raise PermissionError(person)
        request.session["person"] = person

    oidc.add_routes(app, issuer, CLIENT_ID, CLIENT_SECRET, claim, sign_in)

    @app.get("/whoami")
    def whoami(request: Request) -> str | None:
        return request.session.get("person")

    @app.get("/")
    def home() -> str:
        return "home"

    return app


@contextmanager
def signin_site(
    folder: Path, claims_in_id_token: bool = False, claim: str = "email"
) -> Iterator[tuple[str, Provider]]:
    """The app on a free port and the provider that knows it as its one client."""
    app_server = AppServer()
    callback = f"{app_server.base}/signin/oidc/callback"
    provider = Provider(CLIENT_ID, CLIENT_SECRET, callback, folder / "provider.log", claims_in_id_token)
    try:
        app_server.serve(make_app(provider.issuer, claim))
        yield app_server.base, provider
    finally:
        app_server.stop()
        provider.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with signin_site(tmp_path_factory.mktemp("idp")) as started:
        yield started


def log_in(page, login: str = "alice", consent: bool = True) -> None:
    """The provider's own login and consent pages, filled as a person would (``consent=False``: the
    consent page is left for the caller)."""
    page.wait_for_selector('input[name="login"]')
    page.fill('input[name="login"]', login)
    page.fill('input[name="password"]', "any password")
    page.click('button[type="submit"]')
    page.wait_for_selector('button:has-text("Continue")')
    if consent:
        page.click('button:has-text("Continue")')


def whoami(page, base: str) -> str | None:
    return page.request.get(f"{base}/whoami").json()


def test_a_person_signs_in_at_the_provider_and_lands_on_next(site, page):
    base, provider = site
    asked = []
    page.on("request", lambda r: asked.append(r.url))
    page.goto(f"{base}/signin/oidc?next=/whoami")
    assert page.url.startswith(f"{provider.issuer}/")  # the provider's own login page
    log_in(page)
    page.wait_for_url(f"{base}/whoami")
    assert "alice@example.test" in page.inner_text("body")
    assert urlsplit(page.url).query == "" and "code" not in page.url and "token" not in page.url
    # the provider was asked for the code flow with PKCE (S256), a state and a nonce
    auth = parse_qs(urlsplit(next(u for u in asked if u.startswith(f"{provider.issuer}/auth"))).query)
    assert auth["response_type"] == ["code"] and auth["code_challenge_method"] == ["S256"]
    assert auth["code_challenge"] and auth["state"] and auth["nonce"]
    assert auth["scope"] == ["openid email"]
    assert any(u.startswith(f"{base}/signin/oidc/callback?code=") for u in asked)
    # this provider keeps the email out of the ID token (the code flow can fetch it): it came from userinfo
    assert "GET /me" in provider.asked()


def test_the_person_is_read_from_the_id_token_where_it_holds_the_claim(tmp_path, page):
    with signin_site(tmp_path, claims_in_id_token=True) as (base, provider):
        page.goto(f"{base}/signin/oidc?next=/whoami")
        log_in(page)
        page.wait_for_url(f"{base}/whoami")
        assert whoami(page, base) == "alice@example.test"
        assert "POST /token" in provider.asked() and "GET /me" not in provider.asked()


def test_a_callback_this_browser_did_not_start_is_refused(site, browser):
    """Login CSRF: the attacker signs in as mallory, stops before the callback, and sends the victim
    its URL (a real code, the attacker's state). The victim's own pending sign-in is left as it was,
    and still completes."""
    base, _ = site
    attacker = browser.new_context()
    victim = browser.new_context()
    try:
        page = attacker.new_page()
        page.route(f"{base}/signin/oidc/callback*", lambda route: route.abort())
        page.goto(f"{base}/signin/oidc?next=/whoami")
        log_in(page, "mallory", consent=False)
        with page.expect_request(lambda r: r.url.startswith(f"{base}/signin/oidc/callback")) as held:
            page.click('button:has-text("Continue")')
        stolen = held.value.url
        code = parse_qs(urlsplit(stolen).query)["code"][0]

        page = victim.new_page()
        page.goto(f"{base}/signin/oidc?next=/whoami")
        login_page = page.url
        with page.expect_response(lambda r: "/signin/oidc/callback" in r.url) as answer:
            page.goto(stolen)
        assert answer.value.status == 403
        text = page.inner_text("body")
        assert "not started in this browser" in text and code not in page.content()
        assert whoami(page, base) is None

        page.goto(login_page)  # the victim's own sign-in, pending all along, still works
        log_in(page, "alice")
        page.wait_for_url(f"{base}/whoami")
        assert whoami(page, base) == "alice@example.test"
    finally:
        attacker.close()
        victim.close()


def test_a_forged_state_is_refused_and_changes_nothing(site):
    base, provider = site
    with httpx.Client(base_url=base) as client:
        started = client.get("/signin/oidc", params={"next": "/whoami"})
        assert started.status_code == 302 and started.headers["location"].startswith(
            f"{provider.issuer}/auth"
        )
        session = client.cookies["session"]
        answer = client.get("/signin/oidc/callback", params={"code": "forged-code", "state": "forged-state"})
        assert answer.status_code == 403 and "not started in this browser" in answer.text
        assert "forged" not in answer.text
        assert client.get("/whoami").json() is None
        assert client.cookies["session"].split(".")[0] == session.split(".")[0]  # the same session data


@pytest.mark.parametrize("target", ["//evil.example/", "https://evil.example/", "/\\evil.example/"])
def test_next_never_leaves_the_site(site, page, target):
    base, _ = site
    asked = []
    page.on("request", lambda r: asked.append(r.url))
    page.goto(f"{base}/signin/oidc?{httpx.QueryParams(next=target)}")
    log_in(page)
    page.wait_for_url(f"{base}/")
    assert whoami(page, base) == "alice@example.test"
    assert not [u for u in asked if "evil.example" in urlsplit(u).netloc]


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example",
        "https://evil.example/x",
        "/\\evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
        "javascript:alert(1)",
        "evil.example",
        "",
        None,
        "http:/evil.example",
    ],
)
def test_only_local_paths_are_kept(target):
    assert oidc.local_path(target) == "/"


def test_a_local_path_is_kept_as_it_is():
    for target in ("/runs/abc?tab=charts#top", "/%2F%2Fevil.example", "/"):
        assert oidc.local_path(target) == target


def test_a_person_who_cancels_is_told_so(site, page):
    base, _ = site
    page.goto(f"{base}/signin/oidc?next=/whoami")
    page.wait_for_selector('input[name="login"]')
    with page.expect_response(lambda r: "/signin/oidc/callback" in r.url) as answer:
        page.click("text=[ Cancel ]")
    assert answer.value.status == 403
    assert page.inner_text("body").startswith("Sign-in was cancelled or refused at the identity provider.")
    assert whoami(page, base) is None


def test_a_person_the_team_does_not_admit_is_refused(site, page):
    base, _ = site
    page.goto(f"{base}/signin/oidc?next=/whoami")
    log_in(page, "mallory", consent=False)
    with page.expect_response(lambda r: "/signin/oidc/callback" in r.url) as answer:
        page.click('button:has-text("Continue")')
    assert answer.value.status == 403
    assert page.inner_text("body").startswith("mallory@example.test may not use this dashboard.")
    assert whoami(page, base) is None


def test_a_person_the_claim_does_not_name_is_refused(tmp_path, page):
    """The dashboard names people by ``nickname``, which this provider's accounts have neither in the
    ID token nor at the userinfo endpoint."""
    with signin_site(tmp_path, claim="nickname") as (base, provider):
        page.goto(f"{base}/signin/oidc?next=/whoami")
        log_in(page, consent=False)
        with page.expect_response(lambda r: "/signin/oidc/callback" in r.url) as answer:
            page.click('button:has-text("Continue")')
        assert answer.value.status == 403
        assert "did not say who you are (no 'nickname' claim)" in page.inner_text("body")
        assert "GET /me" in provider.asked()  # it looked there too
        assert whoami(page, base) is None


def test_a_provider_that_does_not_answer_is_a_refusal_not_a_500():
    server = AppServer()
    server.serve(make_app(f"http://127.0.0.1:{free_port()}"))  # nothing listens there
    try:
        with httpx.Client(base_url=server.base) as client:
            for path in ("/signin/oidc?next=/whoami", "/signin/oidc/callback?code=c&state=s"):
                answer = client.get(path)
                assert answer.status_code == 401, path
                assert "could not be reached" in answer.text and "code=c" not in answer.text
    finally:
        server.stop()


def test_the_claim_names_the_person_only_when_verified():
    assert oidc.person_from({"email": "a@example.test", "email_verified": True}, "email") == "a@example.test"
    assert oidc.person_from({"email": "a@example.test"}, "email") == "a@example.test"
    assert oidc.person_from({"sub": "x"}, "email") is None
    assert oidc.person_from({"preferred_username": "al"}, "preferred_username") == "al"
    for verified in (False, "false"):
        with pytest.raises(oidc.Refused) as refused:
            oidc.person_from({"email": "a@example.test", "email_verified": verified}, "email")
        assert refused.value.status == 403
    assert oidc.scope_for("email") == "openid email" and oidc.scope_for("sub") == "openid"


def test_importing_the_module_imports_no_authlib():
    """The team extra is imported when team mode adds the routes, never with the dashboard."""
    run_script(
        """
        import sys
        import tunetrack.ui.oidc
        assert not {"authlib", "httpx2", "itsdangerous"} & set(sys.modules), sorted(sys.modules)
        """
    )
