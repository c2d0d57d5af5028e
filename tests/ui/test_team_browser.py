"""A team's dashboard as its members meet it: ``tunetrack ui --team FILE`` in a process of its own, in
Chromium, signed in with a personal token or through a real OpenID Connect provider (panva's
oidc-provider on 127.0.0.1), each member seeing only their projects' runs; the token never in a URL
or the server's output; names, notes and tags shown as text."""

from __future__ import annotations

from urllib.parse import urlsplit

from identity_provider import Provider
from test_oidc import CLIENT_ID, CLIENT_SECRET, log_in
from test_team import TEAM, _run

from conftest import XSS
from support.helpers import free_port
from tunetrack.manage import note_run
from tunetrack.team.file import load_team
from tunetrack.team.tokens import Tokens


def _store(tmp_path):
    root = tmp_path / "runs"
    shown = _run(root, "cat-classifier", "vision", tmp_path)
    hidden = _run(root, "launch-plan", "secret-x", tmp_path)
    note_run(shown, XSS, dir=root)  # a note is someone's text: shown as text, never run
    return root, shown, hidden


def _runs_shown(page) -> str:
    page.wait_for_selector("#runs tbody tr")
    return page.inner_text("#runs tbody")


def test_a_member_signs_in_with_a_token_and_sees_only_their_projects(tmp_path, server_factory, page):
    root, shown, hidden = _store(tmp_path)
    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    _, token = Tokens(load_team(team_file).tokens).create("dee@example.test", days=1)
    server = server_factory(root, team=team_file)
    page.goto(f"{server.base}/run/{hidden}")
    page.wait_for_url(f"{server.base}/signin?*")  # nobody yet: the sign-in page, the way back kept
    page.fill("#token", token)
    page.click('button[type="submit"]')
    page.wait_for_url(f"{server.base}/run/{hidden}")
    assert "token" not in page.url
    page.wait_for_selector("#error:not(:empty)")  # dee may not read the secret project
    assert "launch-plan" not in page.content()
    page.goto(server.base + "/")
    listed = _runs_shown(page)
    assert "cat-classifier" in listed and "launch-plan" not in listed
    page.goto(f"{server.base}/run/{shown}")
    page.wait_for_selector("#history li")
    history = page.inner_text("#history")
    assert XSS in history and page.dialogs == []  # the note as text
    assert page.evaluate("document.querySelectorAll('#history img').length") == 0
    page.click("#signout")
    page.wait_for_url(f"{server.base}/signin")
    assert page.request.get(f"{server.base}/api/runs").status == 401
    server.stop()
    assert token not in server.proc.stdout.read()  # never in the server's output


def test_a_member_signs_in_through_the_teams_identity_provider(tmp_path, server_factory, page):
    root, shown, hidden = _store(tmp_path)
    port = free_port()
    provider = Provider(
        CLIENT_ID, CLIENT_SECRET, f"http://127.0.0.1:{port}/signin/oidc/callback", tmp_path / "idp.log"
    )
    try:
        team_file = tmp_path / "team.toml"
        team_file.write_text(
            TEAM
            + f'\n[oidc]\nissuer = "{provider.issuer}"\nclient_id = "{CLIENT_ID}"\n'
            + 'client_secret_env = "TT_TEST_OIDC_SECRET"\n'
        )
        server = server_factory(root, team=team_file, port=port, env={"TT_TEST_OIDC_SECRET": CLIENT_SECRET})
        page.goto(server.base + "/")
        page.wait_for_url(f"{server.base}/signin?*")
        page.click("text=Sign in with the team's identity provider")
        log_in(page, "ana")
        page.wait_for_url(server.base + "/")
        assert urlsplit(page.url).query == ""  # no code, no token
        listed = _runs_shown(page)
        assert "cat-classifier" in listed and "launch-plan" in listed  # ana reads every project
        assert page.request.get(f"{server.base}/api/server").json()["person"] == "ana@example.test"
        r = page.request.post(
            f"{server.base}/api/runs/{hidden}/edit",
            data={"add": ["nope"]},
            headers={"Content-Type": "application/json", "Origin": server.base},
        )
        assert r.status == 403  # ana reads, and edits nothing
    finally:
        provider.stop()


def _signed_in(browser, base: str, token: str):
    """A browser context of its own, signed in with ``token``; its confirm dialogs are accepted."""
    context = browser.new_context(viewport={"width": 1024, "height": 800})
    page = context.new_page()
    page.on("dialog", lambda d: d.accept())
    page.goto(f"{base}/signin")
    page.fill("#token", token)
    page.click('button[type="submit"]')
    page.wait_for_url(f"{base}/")
    return context, page


def test_the_run_page_offers_each_member_the_changes_their_role_allows(tmp_path, server_factory, browser):
    root, shown, hidden = _store(tmp_path)
    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    tokens = Tokens(load_team(team_file).tokens)
    server = server_factory(root, team=team_file)
    offered = {}
    for who in ("ana", "bo", "cy"):
        context, page = _signed_in(browser, server.base, tokens.create(f"{who}@example.test", days=1)[1])
        page.goto(f"{server.base}/run/{hidden}")
        page.wait_for_selector("#edit[data-offered]", state="attached")
        offered[who] = [b for b in ("edit", "delete") if page.is_visible(f"#{b}")]
        if who == "bo":  # bo edits: a tag, a new name, a note
            page.click("#edit")
            page.fill("#edit-tags", "+reviewed")
            page.fill("#edit-name", "launch-plan-reviewed")
            page.fill("#edit-note", "looks fine")
            page.click("#edit-form button[type=submit]")
            page.wait_for_selector("#title:has-text('launch-plan-reviewed')")
            page.wait_for_selector("#history li")
            history = page.inner_text("#history")
            assert (
                "bo@example.test (127.0.0.1): name: launch-plan → launch-plan-reviewed; +reviewed; note: looks fine"
                in history
            )
        if who == "cy":  # cy deletes, after the browser's confirm
            page.click("#delete")
            page.wait_for_url(f"{server.base}/")
            assert "launch-plan" not in _runs_shown(page)
        context.close()
    assert offered == {"ana": [], "bo": ["edit"], "cy": ["edit", "delete"]}
