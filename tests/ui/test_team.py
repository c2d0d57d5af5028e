"""A team's dashboard (``tunetrack ui --team FILE``): every route, for every role, over runs of two
projects that carry everything the routes read (metrics, config, samples, a histogram, an image, a
checkpoint, an artifact). Allowed calls succeed; the rest answer 401 or 403, change nothing, and
never let a run of a project the person may not read show through, not even its id or its name."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

import tunetrack
from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.team.file import load_team
from tunetrack.team.tokens import Token, Tokens
from tunetrack.ui.app import create_app

TEAM = """
[groups]
ml = ["ana@example.test", "Bo@Example.test", "cy@example.test", "dee@example.test"]

[[access]]
projects = "*"
read = ["@ml"]

[[access]]
projects = ["vision", "secret-*"]
edit = ["bo@example.test"]
delete = ["cy@example.test"]

[[access]]
projects = "secret-*"
deny = ["dee@example.test"]
"""
#: what each person may do in the secret project (``deny`` takes dee's read away; eve is in no rule)
ROLES = {"ana": "read", "bo": "edit", "cy": "delete", "dee": "none", "eve": "none"}
RANK = {"none": 0, "read": 1, "edit": 2, "delete": 3}


def _run(root: Path, name: str, project: str, tmp: Path) -> str:
    t = Tracker(dir=root, name=name, project=project, system=False, console=False).start()
    t.log_config({"lr": 0.01, "seed": 1})
    for step in range(1, 6):
        t.log({"train/loss": 1.0 / step, "eval/loss": 1.1 / step}, step=step)
        t.log({"grads": tunetrack.Histogram(np.linspace(0, step, 50))}, step=step)
    t.log_table("completions", [{"prompt": f"{name} asks", "completion": "an answer", "reward": 0.5}], step=5)
    t.log_image("pics", np.zeros((8, 8, 3), dtype=np.uint8), step=5)
    ckpt = tmp / f"{name}-ckpt"
    ckpt.mkdir()
    (ckpt / "adapter_model.safetensors").write_bytes(b"weights of " + name.encode())
    t.log_checkpoint(ckpt, step=5)
    data = tmp / f"{name}-data.txt"
    data.write_text(f"data of {name}")
    t.log_artifact(data, name=f"ds-{'hidden' if project.startswith('secret') else 'shown'}", kind="dataset")
    t.finish()
    return t.id


def make_team(tmp: Path, people: Iterable[str]) -> tuple[Path, Path, str, str, dict[str, str]]:
    """In ``tmp``: a store with a run in vision and one in the secret project, the team file ``TEAM``
    and a token for each of ``people``: (store, team file, the vision run, the secret run, tokens)."""
    root = tmp / "runs"
    shown = _run(root, "cat-classifier", "vision", tmp)
    hidden = _run(root, "launch-plan", "secret-x", tmp)
    team_file = tmp / "team.toml"
    team_file.write_text(TEAM)
    tokens = Tokens(load_team(team_file).tokens)
    return (
        root,
        team_file,
        shown,
        hidden,
        {who: tokens.create(f"{who}@example.test", days=1)[1] for who in people},
    )


@pytest.fixture(scope="module")
def team_store(tmp_path_factory):
    return make_team(tmp_path_factory.mktemp("team"), ROLES)


def _media(root: Path, run_id: str) -> str:
    return open_run(run_id, dir=root).folder.media()[0]


def reads(shown: str, hidden: str, media: str) -> dict[str, str]:
    """One request per GET route of the API, about the ``hidden`` run where it names a run (``{}``:
    none, the route lists)."""
    return {
        "/api/runs": "/api/runs",
        "/api/keys": "/api/keys",
        "/api/runs/{run_id}": f"/api/runs/{hidden}",
        "/api/runs/{run_id}/logs": f"/api/runs/{hidden}/logs",
        "/api/runs/{run_id}/series": f"/api/runs/{hidden}/series?key=train/loss",
        "/api/series": f"/api/series?run={hidden}&key=train/loss",
        "/api/runs/{run_id}/distribution": f"/api/runs/{hidden}/distribution?key=grads",
        "/api/runs/{run_id}/across": f"/api/runs/{hidden}/across?pattern=*/loss",
        "/api/runs/{run_id}/families": f"/api/runs/{hidden}/families?match=loss",
        "/api/compare": f"/api/compare?id={shown}&id={hidden}",
        "/api/diff": f"/api/diff?a={shown}&b={hidden}",
        "/api/report": f"/api/report?run={hidden}",
        "/api/runs/{run_id}/media/{path}": f"/api/runs/{hidden}/media/{media}",
        "/api/runs/{run_id}/samples": f"/api/runs/{hidden}/samples",
        "/api/runs/{run_id}/samples/curve": f"/api/runs/{hidden}/samples/curve?key=completions&column=reward",
        "/api/runs/{run_id}/samples/row": f"/api/runs/{hidden}/samples/row?key=completions&step=5&index=0",
        "/api/samples/runs": "/api/samples/runs?key=completions",
        "/api/samples/compare": f"/api/samples/compare?id={shown}&id={hidden}&key=completions",
        "/api/select": "/api/select",
        "/api/groups": "/api/groups?by=lr",
        "/api/params": "/api/params?metric=train/loss",
        "/api/config-keys": "/api/config-keys",
        "/api/compare/groups": f"/api/compare/groups?id={shown}&id={hidden}&by=lr&key=train/loss",
        "/api/runs/{run_id}/checkpoints": f"/api/runs/{hidden}/checkpoints",
        "/api/runs/{run_id}/lineage": f"/api/runs/{hidden}/lineage",
        "/api/artifacts": "/api/artifacts",
        "/api/artifacts/versions": "/api/artifacts/versions?name=ds-hidden",
        "/api/server": "/api/server",
        "/api/runs/{run_id}/history": f"/api/runs/{hidden}/history",
    }


#: the routes that list or look across runs: a member who may not read the hidden run gets an answer
#: without it (every other GET names the hidden run, and is refused)
LISTINGS = {
    "/api/runs",
    "/api/keys",
    "/api/select",
    "/api/groups",
    "/api/params",
    "/api/config-keys",
    "/api/samples/runs",
    "/api/artifacts",
    "/api/server",
}
#: what a member who may not read the hidden run is answered where it is not a 403
NOT_FOUND = {"/api/artifacts/versions"}  # an artifact only hidden runs made: as if there were none
PAGES = ["/", "/run/{hidden}", "/compare?id={hidden}", "/artifacts", "/openapi.json", "/docs"]


def client(root: Path, team_file: Path, address: str = "198.51.100.7") -> TestClient:
    return TestClient(
        create_app(root, team=load_team(team_file)), base_url="http://dash.test", client=(address, 40000)
    )


def test_every_route_for_every_role(team_store):
    root, team_file, shown, hidden, texts = team_store
    c = client(root, team_file)
    routes = reads(shown, hidden, _media(root, hidden))
    api = {path for path, ops in c.app.openapi()["paths"].items() if "get" in ops}
    assert api == set(routes), "a route was added: give it its row here, and its decision"
    for path, url in routes.items():
        assert c.get(url).status_code == 401, path  # nobody: no answer at all
        assert c.get(url, headers={"Authorization": "Bearer tt_000000000000_" + "x" * 43}).status_code == 401
    for who, role in ROLES.items():
        auth = {"Authorization": f"Bearer {texts[who]}"}
        for path, url in routes.items():
            r = c.get(url, headers=auth)
            if RANK[role] >= RANK["read"] or path in LISTINGS:
                assert r.status_code == 200, (who, path, r.text[:300])
            elif path in NOT_FOUND:
                assert r.status_code == 404, (who, path, r.text[:300])
            else:
                assert r.status_code == 403, (who, path, r.status_code, r.text[:300])
            if RANK[role] == 0:  # not a trace of the hidden run: its id, its name, its project
                assert hidden not in r.text and "launch-plan" not in r.text and "secret-x" not in r.text, (
                    who,
                    path,
                )
        if RANK[role] == 0 and who != "eve":
            assert shown in c.get("/api/runs", headers=auth).text  # dee still reads the other project


def test_a_first_screen_before_the_table_shows_no_hidden_run(team_store):
    """``newest``, asked of a fresh dashboard (its table not built: the runs are opened from the
    store's index) and of one that built it, leaves out what the person may not read."""
    root, team_file, shown, hidden, texts = team_store
    for who, role in ROLES.items():
        if RANK[role] != 0 or who == "eve":
            continue
        auth = {"Authorization": f"Bearer {texts[who]}"}
        fresh = client(root, team_file)
        for c in (fresh, fresh):  # the second time, from the table the first request's poll built
            first = c.get("/api/runs", params={"newest": 5, "format": "table"}, headers=auth)
            assert first.status_code == 200 and first.headers["cache-control"] == "no-store"
            assert shown in first.text and hidden not in first.text and "launch-plan" not in first.text
            c.get("/api/runs", headers=auth)


def test_pages_send_nobody_to_sign_in_and_never_show_a_hidden_run(team_store):
    root, team_file, shown, hidden, texts = team_store
    c = client(root, team_file)
    for page in PAGES:
        url = page.format(hidden=hidden)
        r = c.get(url, follow_redirects=False)
        if url.startswith("/openapi"):
            assert r.status_code == 401
        else:
            assert r.status_code == 303 and r.headers["location"].startswith("/signin?next="), url
    r = c.get(f"/run/{hidden}", headers={"Authorization": f"Bearer {texts['dee']}"})
    assert r.status_code == 403 and "launch-plan" not in r.text
    assert c.get(f"/run/{shown}", headers={"Authorization": f"Bearer {texts['dee']}"}).status_code == 200


def _post(c: TestClient, url: str, token: str, body: dict) -> int:
    return c.post(
        url, json=body, headers={"Authorization": f"Bearer {token}", "Origin": "http://dash.test"}
    ).status_code


def test_changes_by_role_and_each_one_audited(tmp_path):
    root = tmp_path / "runs"
    ids = {p: _run(root, f"run-{p}", p, tmp_path) for p in ("vision", "secret-x")}
    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    tokens = Tokens(load_team(team_file).tokens)
    texts = {who: tokens.create(f"{who}@example.test", days=1)[1] for who in ROLES}
    c = client(root, team_file, address="203.0.113.9")
    changes = {path for path, ops in c.app.openapi()["paths"].items() if set(ops) - {"get"}}
    assert changes == {f"/api/runs/{{run_id}}/{verb}" for verb in ("edit", "stop", "delete")}, (
        "a route that changes the store was added: test it here, for every role"
    )
    secret = ids["secret-x"]
    for who, role in ROLES.items():
        before = open_run(secret, dir=root).meta["edits"]
        status = _post(c, f"/api/runs/{secret}/edit", texts[who], {"add": [f"seen-by-{who}"], "note": who})
        assert status == (200 if RANK[role] >= RANK["edit"] else 403), who
        after = open_run(secret, dir=root).meta["edits"]
        assert len(after) == len(before) + (status == 200)  # a refusal changes nothing
    assert _post(c, f"/api/runs/{secret}/stop", texts["ana"], {"reason": "no"}) == 403
    assert _post(c, f"/api/runs/{secret}/stop", texts["bo"], {}) == 409  # allowed, but it has ended
    for who in ("ana", "bo", "dee", "eve"):
        assert _post(c, f"/api/runs/{secret}/delete", texts[who], {}) == 403
        assert open_run(secret, dir=root).id == secret
    assert _post(c, f"/api/runs/{secret}/rename", texts["cy"], {}) in (404, 405)  # no such route
    assert _post(c, f"/api/runs/{secret}/edit", texts["cy"], {"name": "launch-plan-v2"}) == 200
    assert _post(c, f"/api/runs/{secret}/delete", texts["cy"], {}) == 200
    assert [r.id for r in tunetrack.reader.list_runs(dir=root)] == [ids["vision"]]
    # the trail: who, from where, what; the deletion outlives the run
    trail = [json.loads(line) for line in _cli("audit", "--dir", str(root), "--json").splitlines()]
    mine = [(e["by"], e["action"], e["what"], e["origin"]) for e in trail if e["run"] == secret]
    assert mine == [
        ("bo@example.test", "tag+note", "+seen-by-bo; note: bo", "203.0.113.9"),
        ("cy@example.test", "tag+note", "+seen-by-cy; note: cy", "203.0.113.9"),
        ("cy@example.test", "rename", "name: run-secret-x → launch-plan-v2", "203.0.113.9"),
        ("cy@example.test", "delete", "deleted (finished; tags seen-by-bo, seen-by-cy)", "203.0.113.9"),
    ]


def _cli(*args: str) -> str:
    from click.testing import CliRunner

    from tunetrack.cli import cli

    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_revoked_and_expired_tokens_and_the_sessions_they_began_are_refused(team_store, tmp_path):
    root, team_file, shown, _, texts = team_store
    tokens = Tokens(load_team(team_file).tokens)
    entry, text = tokens.create("ana@example.test", days=1, name="laptop")
    c = client(root, team_file)
    r = c.post("/signin", data={"token": text, "next": f"/run/{shown}?x=1"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/run/{shown}?x=1"  # no token in the URL
    assert text not in r.headers.get("set-cookie", "")  # the cookie holds a signed session, not the token
    assert c.get("/api/server").json()["person"] == "ana@example.test"
    assert _cli("token", "revoke", entry.id, "--team", str(team_file)).startswith(f"revoked {entry.id}")
    assert c.get("/api/runs").status_code == 401  # the session it began ended with it
    assert c.get("/api/runs", headers={"Authorization": f"Bearer {text}"}).status_code == 401
    # expired: an entry whose time is up, written as the CLI writes them
    old, old_text = tokens.create("ana@example.test", days=1)
    data = json.loads(tokens.path.read_text())
    for t in data["tokens"]:
        if t["id"] == old.id:
            t["expires"] = time.time() - 1
    tokens.path.write_text(json.dumps(data))
    assert c.get("/api/runs", headers={"Authorization": f"Bearer {old_text}"}).status_code == 401
    assert Token(**next(t for t in data["tokens"] if t["id"] == old.id)).valid(time.time()) is False
    listed = _cli("token", "list", "--team", str(team_file))
    assert re.search(rf"{entry.id}  ana@example.test  laptop .* revoked", listed)
    assert old_text not in tokens.path.read_text() and text not in listed  # only digests are kept


def test_a_sign_in_form_never_echoes_the_token_and_refuses_another_sites_post(team_store):
    root, team_file, shown, _, texts = team_store
    c = client(root, team_file)
    bad = "tt_0123456789ab_" + "y" * 43
    r = c.post("/signin", data={"token": bad, "next": "/"})
    assert r.status_code == 401 and bad not in r.text and "not valid" in r.text
    r = c.post("/signin", data={"token": texts["ana"]}, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403 and texts["ana"] not in r.text
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        r = c.post("/signin", data={"token": texts["ana"], "next": target}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/", target


PROXY_TEAM = (
    TEAM
    + """
[proxy]
header = "X-Forwarded-Email"
trusted = ["10.1.0.0/16"]
"""
)


def test_a_proxys_identity_header_counts_only_from_the_trusted_addresses(team_store, tmp_path):
    root, _, shown, hidden, _ = team_store
    team_file = tmp_path / "proxied.toml"
    team_file.write_text(PROXY_TEAM)
    proxied = client(root, team_file, address="10.1.2.3")
    r = proxied.get(f"/api/runs/{hidden}", headers={"X-Forwarded-Email": "ana@example.test"})
    assert r.status_code == 200 and r.json()["id"] == hidden
    r = proxied.get(f"/api/runs/{hidden}", headers={"X-Forwarded-Email": "dee@example.test"})
    assert r.status_code == 403
    spoofed = client(root, team_file, address="192.0.2.66")  # straight to the server, not through the proxy
    r = spoofed.get(f"/api/runs/{hidden}", headers={"X-Forwarded-Email": "ana@example.test"})
    assert r.status_code == 401 and "not from 192.0.2.66" in r.json()["detail"]
    assert spoofed.get("/api/runs", headers={"X-Forwarded-Email": "cy@example.test"}).status_code == 401


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[[access]]\nprojects = '*'\nread = ['@nobody']\n", "names the group @nobody"),
        ("[[access]]\nprojects = '*'\nwrite = ['a@b']\n", "has no 'write'"),
        ("[acess]\n", "has no 'acess'"),
        ("[[access]]\nprojects = '*'\n", "grants anyone anything"),
        ("[[access]]\nprojects = '*'\nread=['*']\n[proxy]\nheader='X-User'\n", "trusted names no address"),
        (
            "[[access]]\nprojects = '*'\nread=['*']\n[oidc]\nissuer='https://id'\nclient_id='t'\nclient_secret_env='NO_SUCH_VAR_TT'\n",
            "$NO_SUCH_VAR_TT, which is not set",
        ),
    ],
)
def test_a_team_file_that_is_wrong_says_where_in_one_line(tmp_path, text, problem):
    path = tmp_path / "team.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(problem)) as info:
        load_team(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_editing_the_team_file_takes_effect_at_once_and_a_broken_edit_keeps_the_last_rules(
    team_store, tmp_path
):
    root, _, shown, hidden, _ = team_store
    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    tokens = Tokens(load_team(team_file).tokens)
    ana = {"Authorization": f"Bearer {tokens.create('ana@example.test', days=1)[1]}"}
    c = client(root, team_file)
    assert c.get(f"/api/runs/{hidden}", headers=ana).status_code == 200
    team_file.write_text(TEAM + '\n[[access]]\nprojects = "secret-*"\ndeny = ["ana@example.test"]\n')
    assert c.get(f"/api/runs/{hidden}", headers=ana).status_code == 403  # taken away, no restart
    assert hidden not in c.get("/api/runs", headers=ana).text
    with pytest.warns(tunetrack.TunetrackWarning, match="the team file was not applied"):
        team_file.write_text(TEAM + "\n[[access]]\nprojects = '*'\nread = ['@nobody']\n")
        assert c.get(f"/api/runs/{hidden}", headers=ana).status_code == 403  # the last good rules
    assert c.get(f"/api/runs/{shown}", headers=ana).status_code == 200


def test_a_fork_into_a_project_a_member_may_not_read_is_not_named_on_its_parents_pages(tmp_path):
    """A vision run forked into the secret project: dee, who may read vision only, reads the parent,
    and neither its page, its report, the runs table nor the MCP server's overview names the fork.
    (A fork's own parent stays in its record: its history up to the branch is the fork's data.)"""
    root = tmp_path / "runs"
    parent = _run(root, "cat-classifier", "vision", tmp_path)
    with Tracker(
        dir=root, name="launch-plan", project="secret-x", fork_from=f"{parent}@3", system=False
    ) as t:
        t.log({"train/loss": 0.1}, step=4)
    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    tokens = Tokens(load_team(team_file).tokens)
    dee = {"Authorization": f"Bearer {tokens.create('dee@example.test', days=1)[1]}"}
    ana = {"Authorization": f"Bearer {tokens.create('ana@example.test', days=1)[1]}"}
    c = client(root, team_file)
    for url in (
        f"/api/runs/{parent}",
        f"/api/runs/{parent}?fold=1",
        "/api/runs",
        f"/api/report?run={parent}",
    ):
        r = c.get(url, headers=dee)
        assert r.status_code == 200 and t.id not in r.text and "launch-plan" not in r.text, url
    facts = dict(c.get(f"/api/runs/{parent}", headers=ana).json()["overview"]["facts"])
    assert facts["forks"].startswith(f"{t.id}@3")  # ana reads both: the fork is named
