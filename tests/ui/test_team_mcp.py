"""A team's dashboard serves its agents (``tunetrack ui --team FILE``, ``/mcp``): the MCP server over
Streamable HTTP, driven by the MCP SDK's own client with a personal token, makes the team's decisions
as the pages and the API do. A member sees only the runs of the projects they may read (no id, name
or project of another in any answer, SQL included), is refused a run they may not read, edits only
where they may (each edit recorded as them, from their address), and nobody without a valid token
gets in."""

from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_team import TEAM, make_team

from support.helpers import Server
from tunetrack.reader import open_run
from tunetrack.team.file import load_team
from tunetrack.team.tokens import Tokens

PEOPLE = ("ana", "bo", "dee", "eve")  # reads both, edits the secret one, denied it, in no rule


@pytest.fixture(scope="module")
def team_server(tmp_path_factory):
    root, team_file, shown, hidden, texts = make_team(tmp_path_factory.mktemp("team-mcp"), PEOPLE)
    server = Server(root, team=team_file)
    yield server, root, team_file, shown, hidden, texts
    server.stop()


def call(
    base: str, token: str | None, calls: list[tuple[str, dict]]
) -> tuple[set[str], list[tuple[bool, str]]]:
    """Connect to ``base``/mcp as the SDK's client does, with ``token`` as a bearer token, list the
    tools and make ``calls``: (tool names, [(is an error, the text of the answer)])."""
    import httpx2  # the HTTP client the SDK's transport takes

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def session() -> tuple[set[str], list[tuple[bool, str]]]:
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(headers=headers, timeout=30) as http,
                streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                names = {t.name for t in (await client.list_tools()).tools}
                answers = []
                for name, args in calls:
                    result = await client.call_tool(name, args)
                    text = "".join(c.text for c in result.content)
                    answers.append((bool(result.is_error), text))
                return names, answers

    # on a thread of its own: a browser test before this one leaves Playwright's event loop in this thread
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, session).result()


def _answers(server: Server, token: str, calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    return call(server.base, token, calls)[1]


LISTINGS = [
    ("list_projects", {}),
    ("list_runs", {}),
    ("list_runs", {"project": "secret-x"}),
    ("list_runs", {"where": "config.lr > 0"}),
    ("query", {"sql": "SELECT id, name, project FROM runs"}),
    ("query", {"sql": "SELECT DISTINCT run FROM metrics"}),
    ("query", {"sql": "SELECT run, key FROM params"}),
    ("query", {"sql": "SELECT * FROM params_wide"}),
    ("query", {"sql": "SELECT run, prompt FROM samples"}),
    ("query", {"sql": "SELECT run, data FROM events"}),
    ("query", {"sql": "SELECT count(*) AS n FROM runs"}),
    ("list_artifacts", {}),
    ("get_checkpoints", {"project": "secret-x"}),
]


def test_a_reader_of_both_projects_sees_both(team_server):
    server, _, _, shown, hidden, texts = team_server
    names, answers = call(server.base, texts["ana"], LISTINGS)
    assert {"list_runs", "get_run", "query", "tag_run", "note_run", "stop_run"} <= names
    assert not any(error for error, _ in answers), answers
    projects = {p["project"] for p in json.loads(answers[0][1])}
    assert projects == {"vision", "secret-x"}
    assert {r["id"] for r in json.loads(answers[1][1])["runs"]} == {shown, hidden}
    assert json.loads(answers[10][1])["rows"] == [{"n": 2}]
    assert "ds-hidden" in answers[11][1] and hidden in answers[12][1]
    ((error, text),) = _answers(server, texts["ana"], [("get_run", {"run": hidden})])
    assert not error and "launch-plan" in text


def test_a_member_denied_a_project_sees_no_trace_of_it(team_server):
    server, _, _, shown, hidden, texts = team_server
    for who in ("dee", "eve"):
        answers = _answers(server, texts[who], LISTINGS + [("get_lineage", {"ref": "ds-shown"})])
        for (error, text), (tool, args) in zip(answers, LISTINGS + [("get_lineage", {})]):
            assert not (error and who == "dee"), (tool, args, text)
            for trace in (hidden, hidden[:8], "launch-plan", "secret-x", "ds-hidden"):
                assert trace not in text, (who, tool, args, trace, text)
        if who == "dee":  # reads the other project: sees it whole
            assert {r["id"] for r in json.loads(answers[1][1])["runs"]} == {shown}
            assert json.loads(answers[10][1])["rows"] == [{"n": 1}]
            assert "ds-shown" in answers[11][1]
        else:  # in no rule: sees nothing at all
            assert json.loads(answers[1][1])["runs"] == []
            assert json.loads(answers[10][1])["rows"] == [{"n": 0}]
    naming = [
        ("get_run", {"run": hidden}),
        ("get_run", {"run": "launch-plan"}),
        ("get_metrics", {"runs": [shown, hidden]}),
        ("get_logs", {"run": hidden}),
        ("get_samples", {"run": hidden}),
        ("compare_runs", {"runs": [shown, hidden]}),
        ("get_checkpoints", {"run": hidden}),
        ("get_lineage", {"ref": hidden}),
        ("get_lineage", {"ref": f"{hidden}@5"}),
        ("tag_run", {"run": hidden, "add": ["mine"]}),
    ]
    for (error, text), (tool, _) in zip(_answers(server, texts["dee"], naming), naming):
        assert error and "you may not read this run" in text, (tool, text)
        assert "\n" not in text and "secret-x" not in text and "launch-plan" not in text
    # a ref that names no run: "did you mean" offers only the runs they may read
    lookups = [("get_lineage", {"ref": "ds-hidden"}), ("get_run", {"run": "launch-pla"})]
    for error, text in _answers(server, texts["dee"], lookups):
        assert error and "launch-plan" not in text and "secret" not in text and hidden not in text, text
    assert "did you mean launch-plan" in _answers(server, texts["ana"], lookups[1:])[0][1]
    assert "mine" not in open_run(hidden, dir=team_server[1]).tags


def test_a_reader_may_not_edit_and_an_editor_edits_as_themselves(team_server):
    server, root, _, _, hidden, texts = team_server
    edits = [
        ("tag_run", {"run": hidden, "add": ["reviewed"]}),
        ("note_run", {"run": hidden, "text": "looked at it"}),
        ("stop_run", {"run": hidden, "reason": "enough"}),
    ]
    for error, text in _answers(server, texts["ana"], edits):
        # the SDK says which tool failed before the one line
        assert error and text.endswith(
            ": ana@example.test may not edit the runs of 'secret-x' (the team file's roles)"
        )
    assert "reviewed" not in open_run(hidden, dir=root).tags
    answers = _answers(server, texts["bo"], edits)
    assert answers[0] == (
        False,
        json.dumps({"id": hidden, "name": "launch-plan", "tags": ["reviewed"]}).replace(" ", ""),
    )
    assert not answers[1][0] and json.loads(answers[1][1])["notes"] == 1
    assert answers[2][0] and "nothing to stop" in answers[2][1]  # allowed, but it has ended
    from click.testing import CliRunner

    from tunetrack.cli import cli

    result = CliRunner().invoke(cli, ["audit", "--dir", str(root), "--json"])
    assert result.exit_code == 0, result.output
    trail = [json.loads(line) for line in result.stdout.splitlines()]
    mine = [(e["by"], e["action"], e["origin"]) for e in trail if e["run"] == hidden]
    assert mine == [("bo@example.test", "tag", "127.0.0.1"), ("bo@example.test", "note", "127.0.0.1")]


def test_nobody_without_a_valid_token_gets_in(team_server):
    server, _, team_file, _, _, texts = team_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = httpx.post(f"{server.base}/mcp", json=body, headers=headers)
    assert r.status_code == 401 and "sign in" in r.json()["detail"]
    assert httpx.get(f"{server.base}/mcp", follow_redirects=False).status_code == 401  # not the sign-in page
    with pytest.raises(Exception, match="unhandled errors"):  # the SDK's client: an error response
        call(server.base, None, [])
    tokens = Tokens(load_team(team_file).tokens)
    entry, text = tokens.create("ana@example.test", days=1)
    assert call(server.base, text, [])[0]
    tokens.revoke(entry.id)
    r = httpx.post(f"{server.base}/mcp", json=body, headers={**headers, "Authorization": f"Bearer {text}"})
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    with pytest.raises(Exception, match="unhandled errors"):
        call(server.base, text, [])
    # another site's page, with a member's token: refused as the dashboard's own changes are
    r = httpx.post(
        f"{server.base}/mcp",
        json=body,
        headers={**headers, "Authorization": f"Bearer {texts['ana']}", "Origin": "http://evil.test"},
    )
    assert r.status_code == 403


def test_without_the_sdk_the_dashboard_serves_and_mcp_says_what_to_install(tmp_path, monkeypatch):
    import sys

    from fastapi.testclient import TestClient

    from tunetrack.ui.app import create_app

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # as if the SDK were not there
    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    team = load_team(team_file)
    _, text = Tokens(team.tokens).create("ana@example.test", days=1)
    c = TestClient(create_app(tmp_path / "runs", team=team))
    auth = {"Authorization": f"Bearer {text}"}
    assert c.get("/api/runs", headers=auth).status_code == 200
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=auth)
    assert r.status_code == 501 and "pip install 'tunetrack[mcp]'" in r.json()["detail"]


def test_a_read_only_dashboard_offers_no_edits(tmp_path):
    from fastapi.testclient import TestClient

    from tunetrack.ui.app import create_app

    team_file = tmp_path / "team.toml"
    team_file.write_text(TEAM)
    team = load_team(team_file)
    _, text = Tokens(team.tokens).create("bo@example.test", days=1)
    headers = {"Authorization": f"Bearer {text}", "Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for read_only in (False, True):
        with TestClient(create_app(tmp_path / "runs", read_only=read_only, team=team)) as c:  # its lifespan
            r = c.post("/mcp", json=body, headers=headers)
            assert r.status_code == 200, r.text
            names = {t["name"] for t in r.json()["result"]["tools"]}
            assert ("tag_run" in names) is not read_only and "list_runs" in names


def test_the_docs_client_over_http_as_written(team_server):
    """docs/agents.md's client for a team's server, run as written in a process of its own, its
    dashboard's address and token put in: it lists the runs its person may read."""
    server, _, _, shown, hidden, texts = team_server
    page = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text()
    snippet = re.findall(r"```python\n(.*?)```", page, flags=re.S)[1]
    assert "https://tunetrack.example.com" in snippet and "tt_..." in snippet
    snippet = snippet.replace("https://tunetrack.example.com", server.base).replace("tt_...", texts["dee"])
    done = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [r["id"] for r in listed["runs"]] == [shown] and hidden not in done.stdout
