"""The report file (``tunetrack report``) opened from disk in a real browser with the network off, and
the same report from the dashboard (``GET /api/report`` and the pages' "Download report" link)."""

from __future__ import annotations

import io
import re

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from PIL import Image

from conftest import ARTIFACTS
from support.helpers import XSS, embedded, seed_two_runs, wait_until
from tunetrack import TunetrackWarning
from tunetrack.cli import cli
from tunetrack.reader import open_run
from tunetrack.ui import assets, report
from tunetrack.ui.app import create_app


@pytest.fixture
def written(root, tmp_path):
    """Two runs and the report of both, as the CLI writes it."""
    a, x = seed_two_runs(root)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", a, x, "--dir", str(root), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return a, x, out


def line_pixels(png: bytes) -> tuple[int, int]:
    """Pixels of the first two lines' colours in a chart's canvas (bluish, reddish: common.js's
    lineColor(0) and lineColor(1)); axes, grid and labels are grey."""
    raw = Image.open(io.BytesIO(png)).convert("RGB").tobytes()
    colours = [
        (r, g, b) for r, g, b in zip(raw[0::3], raw[1::3], raw[2::3]) if max(r, g, b) - min(r, g, b) > 60
    ]
    return sum(b > r for r, g, b in colours), sum(r > b for r, g, b in colours)


def test_the_file_draws_its_charts_offline_and_shows_names_as_text(browser, written):
    a, x, out = written
    data = embedded(out.read_text())
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    attempted, dialogs, errors = [], [], []

    def only_the_file(route):
        if route.request.url.startswith("file:"):
            return route.continue_()
        attempted.append(route.request.url)
        return route.abort()

    context.route("**/*", only_the_file)
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)  # CSP refusals too
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(out.as_uri())
        charts = len(data["charts"])
        wait_until(
            lambda: len(page.query_selector_all(".chart[data-drawn] .uplot canvas")) == charts, timeout=20
        )
        drawn = {c.get_attribute("data-key"): c for c in page.query_selector_all(".chart")}
        assert sorted(drawn) == ["eval/loss", "loss"]
        assert drawn["loss"].get_attribute("data-traces") == "2"  # both runs overlaid
        blue, red = line_pixels(drawn["loss"].query_selector("canvas").screenshot())
        assert blue > 50 and red > 50, (blue, red)
        blue, red = line_pixels(drawn["eval/loss"].query_selector("canvas").screenshot())
        assert blue > 20 and red == 0, (blue, red)  # alpha's 4 evaluations, joined across the None steps

        headings = [h.inner_text() for h in page.query_selector_all("#runs h2")]
        assert headings == [f"alpha ({a})", f"{XSS} ({x})"]
        assert page.query_selector_all("img") == []  # the name is text, not an element
        assert f"{XSS} ({x})" in page.inner_text("#diff thead")
        assert [tr.get_attribute("data-key") for tr in page.query_selector_all("#diff tbody tr")] == [
            row["key"] for row in data["diff"]
        ]
        assert "checkpoint" in page.inner_text("#events") and "ckpt-20" in page.inner_text("#events")
        assert "MIT" in page.inner_text("footer")
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
    finally:
        context.close()
    assert attempted == []  # no request left the file (none would have reached anything: offline)
    assert dialogs == []
    assert errors == []  # no script error, and nothing the page's policy refused to load


def test_without_uplot_the_report_says_so_and_shows_the_rest(root, tmp_path, browser, monkeypatch):
    """A build made without npm has no uPlot (hatch_build.py): no charts, and the page says why."""
    a, _ = seed_two_runs(root)
    monkeypatch.setattr(assets, "UPLOT_JS", tmp_path / "not-built.js")
    with pytest.warns(TunetrackWarning, match="not built in"):
        html = report.render([open_run(a, dir=root)])
    out = tmp_path / "r.html"
    out.write_text(html)
    page = browser.new_page()
    try:
        page.goto(out.as_uri())
        wait_until(lambda: "not built in" in page.inner_text("#charts"), timeout=20)
        assert page.query_selector_all(".chart") == []
        assert page.inner_text("#runs h2") == f"alpha ({a})"
    finally:
        page.close()


def test_the_dashboard_serves_the_same_report(root, written):
    a, x, out = written
    with TestClient(create_app(root), base_url="http://test") as c:
        response = c.get("/api/report", params={"run": [a, x]})
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        assert (
            response.headers["content-disposition"] == f'attachment; filename="tunetrack-report-{a}-{x}.html"'
        )
        served, written_data = embedded(response.text), embedded(out.read_text())
        assert served.pop("generated") >= written_data.pop("generated")
        assert served == written_data
        missing = c.get("/api/report", params={"run": [a, "nosuchrun"]})
        assert missing.status_code == 404 and "nosuchrun" in missing.json()["detail"]


def test_the_run_and_compare_pages_link_to_their_report(root, written, server_factory, browser):
    a, x, _ = written
    server = server_factory(root)
    context = browser.new_context(accept_downloads=True)
    try:
        page = context.new_page()
        page.goto(f"{server.base}/run/{a}")
        with page.expect_download() as download:
            page.click("#report")
        assert download.value.suggested_filename == f"tunetrack-report-{a}.html"
        assert [r["id"] for r in embedded(download.value.path().read_text())["runs"]] == [a]
        page.goto(f"{server.base}/compare?ids={a},{x}")
        href = page.get_attribute("#report", "href")
        assert re.fullmatch(f"/api/report\\?run={a}&run={x}", href), href
    finally:
        context.close()


class Gone:
    """A backend whose tracking server went away: every row it is given is missed."""

    def start(self, run): ...
    def log_config(self, config): ...
    def log(self, rows):
        raise ConnectionError("tracking server went away")

    def finish(self, state): ...


def test_the_report_shows_notes_and_what_was_not_kept(root, tmp_path, browser):
    """The report words a run as ``tunetrack show`` and the run page do: its notes and the rows it
    could not keep are in its overview too (notes as text)."""
    from tunetrack import Tracker
    from tunetrack.manage import note_run

    t = Tracker(dir=root, name="noted", system=False, backends=[Gone()]).start()
    for step in range(1, 11):
        t.log({"loss": 1.0 / step}, step=step)
    with pytest.warns(TunetrackWarning):
        t.finish()
    note_run(t.id, "diverged after the warm-up", dir=root)
    note_run(t.id, XSS, dir=root)
    run = open_run(t.id, dir=root)
    out = tmp_path / "r.html"
    out.write_text(report.render([run]))
    page = browser.new_page()
    try:
        page.goto(out.as_uri())
        page.wait_for_selector("#runs dd[data-fact='note']")
        facts = {dd.get_attribute("data-fact"): dd.inner_text() for dd in page.query_selector_all("#runs dd")}
        assert facts["not kept"] == f"{run.counters()['backend_missed/Gone']} rows not sent to Gone"
        notes = [dd.inner_text() for dd in page.query_selector_all("#runs dd[data-fact='note']")]
        assert [n.split(" (")[0] for n in notes] == [
            "diverged after the warm-up",
            XSS,
        ]  # oldest first, as text
        assert page.query_selector("img") is None
    finally:
        page.close()


def test_the_report_shows_a_table_of_samples(root, tmp_path, browser):
    """A step's samples in the file, offline: the first rows, a conversation as its turns, a long
    completion cut with its marker, user text as text."""
    from tunetrack import Tracker

    t = Tracker(dir=root, name="grpo", system=False).start()
    for step in (1, 2):
        t.log_table(
            "completions",
            [
                {
                    "prompt": [{"role": "user", "content": XSS}],
                    "completion": f"{i}: " + "y" * 3000,
                    "reward": i / 4,
                }
                for i in range(40)
            ],
            step=step,
        )
    t.finish()
    out = tmp_path / "r.html"
    out.write_text(report.render([open_run(t.id, dir=root)]))
    page = browser.new_page()
    try:
        page.goto(out.as_uri())
        page.wait_for_selector("#samples-section table.samples tbody tr")
        assert page.inner_text("#samples h3") == "completions at step 2"
        assert page.locator("#samples tbody tr").count() == 16
        assert "the first 16 of 40 rows" in page.inner_text("#samples")
        cells = page.locator("#samples tbody tr").nth(3).locator("td").all_inner_texts()
        assert cells[0] == "4" and cells[3] == "0.75"
        turn = page.locator("#samples tbody tr").nth(3).locator("td.chat details.msg-user")  # a chat's turn
        assert turn.locator("summary b").inner_text() == "user"
        assert turn.locator(".turn-text").inner_text() == XSS
        assert cells[2].endswith("… [2,003 more characters]")
        assert page.query_selector("img") is None
        page.locator("#samples-section").screenshot(path=str(ARTIFACTS / "report-samples.png"))
    finally:
        page.close()


def test_a_failed_run_shows_the_last_lines_of_its_console(browser, root, tmp_path):
    from support.helpers import run_script

    failed = run_script(
        f"""
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, system=False).start()
        print("RUN", t.id, flush=True)
        print("loading shard 3 of 4", flush=True)
        raise RuntimeError("NCCL watchdog timeout")
        """,
        env={"TUNETRACK_CONSOLE": "1"},
        check=False,
    )
    run_id = failed.stdout.split()[1]
    out = tmp_path / "failed.html"
    assert CliRunner().invoke(cli, ["report", run_id, "--dir", str(root), "-o", str(out)]).exit_code == 0
    page = browser.new_page()
    page.goto(out.as_uri())
    tail = page.locator("section.run pre.console-tail")
    wait_until(lambda: tail.count() == 1)
    text = tail.inner_text()
    # the lines printed before the traceback (the report shows the traceback whole, once, above)
    assert text.rstrip().endswith("loading shard 3 of 4") and "Traceback" not in text
    assert page.locator("text=RuntimeError: NCCL watchdog timeout").count() >= 1
    page.close()
