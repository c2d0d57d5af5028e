"""A team's dashboard against the attacks a browser carries: another site's page, open in the same
browser as a signed-in member, posting changes and sign-ins (cross-site request forgery) and framing
the dashboard (clickjacking); scripts hidden in run names, notes, tags, config values and samples
(cross-site scripting); and paths that try to leave a run's media or name files outside the store.
All in Chromium against ``tunetrack ui --team`` in a process of its own. The attacker's page is
served from another port of 127.0.0.1: the same site as the dashboard for the browser's cookies
(ports do not count), so only the server's own checks stand in the way."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
from test_team import TEAM

from conftest import XSS
from support.helpers import wait_until
from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.team.file import load_team
from tunetrack.team.tokens import Tokens


@pytest.fixture
def team_site(tmp_path, server_factory, page):
    """A store with a run whose every user string is a script, the dashboard over it, and the
    browser signed in as bo (who may edit, and not delete)."""
    root = tmp_path / "runs"
    t = Tracker(dir=root, name=XSS, project="vision", tags=[XSS], system=False, console=False).start()
    t.log_config({"prompt_template": XSS, "lr": 0.1})
    for step in range(1, 4):
        t.log({"train/loss": 1.0 / step}, step=step)
    t.log_table("completions", [{"prompt": XSS, "completion": XSS, "reward": 1.0}], step=3)
    t.finish()
    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    _, token = Tokens(load_team(team_file).tokens).create("bo@example.test", days=1)
    server = server_factory(root, team=team_file)
    page.goto(f"{server.base}/signin")
    page.fill("#token", token)
    page.click('button[type="submit"]')
    page.wait_for_url(f"{server.base}/")
    r = page.request.post(
        f"{server.base}/api/runs/{t.id}/edit",
        data={"note": XSS},
        headers={"Content-Type": "application/json", "Origin": server.base},
    )
    assert r.status == 200  # bo's own note: a script too
    return root, t.id, server, token


class _Attacker:
    """Another site's pages, on another port of 127.0.0.1."""

    def __init__(self, folder: Path) -> None:
        handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=str(folder), **kw)  # noqa: E731
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def attacker(tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    site = _Attacker(folder)
    yield folder, site.base
    site.stop()


def _edits(root: Path, run_id: str) -> int:
    return len(open_run(run_id, dir=root).meta["edits"])


def test_another_sites_page_cannot_change_a_run_or_sign_anyone_in(team_site, attacker, page):
    root, run_id, server, token = team_site
    folder, evil = attacker
    before = _edits(root, run_id)
    target = f"{server.base}/api/runs/{run_id}"
    (folder / "forms.html").write_text(
        f"""<!doctype html><body>
<form id="edit" method="post" action="{target}/edit" enctype="text/plain" target="a">
  <input name='{{"add": ["pwned"], "x": "' value='"}}'></form>
<form id="stop" method="post" action="{target}/stop" enctype="text/plain" target="b">
  <input name='{{"reason": "' value='"}}'></form>
<form id="signin" method="post" action="{server.base}/signin" target="c">
  <input name="token" value="{token}"></form>
<iframe name="a"></iframe><iframe name="b"></iframe><iframe name="c"></iframe>
<script>
  for (const id of ["edit", "stop", "signin"]) document.getElementById(id).submit();
  fetch("{target}/edit", {{method: "POST", mode: "no-cors", credentials: "include",
    headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{add: ["pwned-fetch"]}})}})
    .finally(() => {{ document.title = "sent"; }});
</script></body>"""
    )
    answers = []
    # the dashboard's answers to the attacker's posts (not to what its own page, still loading, asked)
    page.on(
        "response",
        lambda r: (
            answers.append((r.url, r.status))
            if r.url.startswith(server.base) and r.request.method == "POST"
            else None
        ),
    )
    page.goto(f"{evil}/forms.html")
    wait_until(lambda: page.title() == "sent" and len(answers) >= 4, timeout=20)
    # each refused for its Origin (another site's): the forms, the sign-in, and the fetch alike
    assert sorted(status for _, status in answers) == [403, 403, 403, 403], answers
    assert _edits(root, run_id) == before  # nothing changed
    assert open_run(run_id, dir=root).tags == [XSS]


def test_the_dashboard_cannot_be_framed_by_another_site(team_site, attacker, page):
    _, run_id, server, _ = team_site
    folder, evil = attacker
    (folder / "frame.html").write_text(
        f'<!doctype html><iframe id="f" src="{server.base}/run/{run_id}"></iframe>'
    )
    blocked = []
    page.on(
        "response", lambda r: blocked.append(r.headers) if r.url == f"{server.base}/run/{run_id}" else None
    )
    page.goto(f"{evil}/frame.html")
    wait_until(lambda: bool(blocked), timeout=20)
    assert "frame-ancestors 'none'" in blocked[0]["content-security-policy"]
    assert blocked[0]["x-frame-options"] == "DENY"
    frame = page.frame_locator("#f")
    assert frame.locator("header").count() == 0  # Chromium shows its own error page, not ours


def test_scripts_in_every_user_string_render_as_text(team_site, page):
    root, run_id, server, _ = team_site
    page.goto(f"{server.base}/")
    page.wait_for_selector("#runs tbody tr")
    page.goto(f"{server.base}/run/{run_id}")
    page.wait_for_selector("#history li")
    assert XSS in page.inner_text("#history") and XSS in page.inner_text("#title")
    page.goto(f"{server.base}/run/{run_id}#samples")
    page.wait_for_selector("#sample-table .vbody .vrow, #sample-table .vbody [role=row]", timeout=20000)
    body = page.inner_text("body")
    assert body.count(XSS) >= 3  # the name, the note in the history, the sample
    assert page.dialogs == []
    assert page.evaluate("document.querySelectorAll('img[src=x]').length") == 0


@pytest.mark.parametrize(
    "path",
    [
        "/api/runs/{run}/media/../../team.tokens.json",
        "/api/runs/{run}/media/..%2F..%2Fteam.toml",
        "/api/runs/{run}/media/%2e%2e/%2e%2e/team.tokens.json",
        "/api/runs/{run}/media//etc/passwd",
        "/api/report?run=../team.tokens.json",
        "/api/report?run=..%2F..%2Fteam.toml",
        "/run/..%2F..%2Fteam.tokens.json",
        "/static/../../team.tokens.json",
        "/static/%2e%2e/%2e%2e/team.toml",
    ],
)
def test_paths_that_try_to_leave_the_store_find_nothing(team_site, page, path):
    _, run_id, server, token = team_site
    r = page.request.get(server.base + path.format(run=run_id))
    assert r.status in (400, 403, 404), (path, r.status)
    text = r.text()
    assert "digest" not in text and "[[access]]" not in text and "root:" not in text and token not in text
