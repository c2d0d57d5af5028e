"""The dashboard in a real browser (Debian's Chromium driven by Playwright) against `tunetrack ui`.

The tests share one store and one dashboard server (``dashboard``), as a user's dashboard serves
many runs at once: each test finds its own runs by id, and the seeded runs are written once.
"""

from __future__ import annotations

import io
import math
import os
import re
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
from PIL import Image

from conftest import ARTIFACTS, XSS
from support.helpers import SRC, Server, drag_across, spawn_script, wait_until
from tunetrack import Tracker
from tunetrack.manage import note_run
from tunetrack.reader import open_run


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """The module's one store: every test writes its runs here."""
    return tmp_path_factory.mktemp("browser") / "runs"


@pytest.fixture(scope="module")
def dashboard(root):
    """The module's one ``tunetrack ui`` over that store (a test that needs another kind of server,
    bound beyond the loopback, starts its own)."""
    server = Server(root)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def seeded(root):
    """Three runs (finished, failed, killed; the last named with markup), written once."""
    return _seed(root)


def _seed(root):
    a = Tracker(
        dir=root, name="alpha", project="p", system=False, config={"lr": 0.1, "model": {"layers": 2}}
    ).start()
    for step in range(1, 51):
        a.log({"loss": 2.0 / step, "lr": 0.1}, step=step)
    a.event("checkpoint", step=25, path="ckpt-25")
    a.finish()
    b = Tracker(
        dir=root, name="beta", project="p", system=False, config={"lr": 0.2, "model": {"layers": 2}}
    ).start()
    for step in range(1, 51):
        b.log({"loss": 3.0 / step, "lr": 0.2}, step=step)
    b.finish("failed")
    x = Tracker(dir=root, name=XSS, project=XSS, tags=[XSS], system=False, config={XSS: XSS}).start()
    x.log({"loss": 1.0}, step=1)
    x.finish("killed")
    return a.id, b.id, x.id


def test_runs_table_run_page_and_compare(seeded, dashboard, page):
    a, b, x = seeded
    server = dashboard
    page.goto(server.base + "/")
    page.wait_for_selector("#runs tbody tr")
    rows = {tr.get_attribute("data-run"): tr.inner_text() for tr in page.query_selector_all("#runs tbody tr")}
    assert {a, b, x} <= set(rows)  # among the other tests' runs in the one store
    assert "finished" in rows[a] and "failed" in rows[b] and "killed" in rows[x]
    page.screenshot(path=str(ARTIFACTS / "runs.png"))

    series_requests = []
    page.on("request", lambda r: series_requests.append(r.url) if "/api/series" in r.url else None)
    page.click("text=alpha")
    # (polling from Python: the page's CSP forbids the eval that wait_for_function would need)
    wait_until(
        lambda: len(page.query_selector_all("#charts .chart[data-drawn] .uplot canvas")) >= 2, timeout=20
    )
    assert len(page.query_selector_all("#charts .chart")) == 2  # loss, lr
    # the checkpoint at step 25 drawn on both charts
    assert [c.get_attribute("data-markers") for c in page.query_selector_all("#charts .chart")] == ["1", "1"]
    assert len(series_requests) == 1  # every chart of the page in one request
    assert page.inner_text("#events").count("checkpoint") == 1
    # the config nested as logged: a "model" section holding "layers"
    assert page.inner_text("#config details[data-path='model'] > summary") == "model"
    layers = page.inner_text("#config details[data-path='model'] > [data-path='model.layers']")
    assert layers.split() == ["layers", "2"]
    page.screenshot(path=str(ARTIFACTS / "run.png"), full_page=True)
    page.fill("#cfgsearch", "LAYERS")  # by path, any case: the entry and the section above it
    assert [e.get_attribute("data-path") for e in page.query_selector_all("#config [data-path]")] == [
        "model",
        "model.layers",
    ]
    page.fill("#cfgsearch", "0.1")  # by value
    assert [e.get_attribute("data-path") for e in page.query_selector_all("#config [data-path]")] == ["lr"]
    page.fill("#cfgsearch", "no such key")
    assert page.inner_text("#config") == "nothing in the config matches"

    page.goto(f"{server.base}/compare?ids={a},{b}")
    wait_until(
        lambda: (
            [c.get_attribute("data-traces") for c in page.query_selector_all("#charts .chart")] == ["2", "2"]
        ),
        timeout=20,
    )
    keys = [tr.get_attribute("data-key") for tr in page.query_selector_all("#diff tbody tr")]
    assert keys == ["lr"]  # model.layers is the same in both: not shown
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
    assert page.dialogs == []


def test_a_chart_grows_while_another_process_logs(root, dashboard, page, tmp_path):
    writer = spawn_script(
        """
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="live", system=False).start()
        print(t.id, flush=True)
        for step in range(1, 400):
            t.log({"loss": 1.0 / step}, step=step)
            time.sleep(0.05)
        t.finish()
    """,
        str(root),
    )
    run_id = writer.stdout.readline().strip()
    server = dashboard
    try:
        page.goto(f"{server.base}/run/{run_id}")
        page.wait_for_selector("#charts .chart[data-points]")
        first = int(page.get_attribute("#charts .chart", "data-points"))
        wait_until(lambda: int(page.get_attribute("#charts .chart", "data-points")) > first + 10, timeout=20)
        page.screenshot(path=str(ARTIFACTS / "live.png"))
    finally:
        writer.kill()


def test_user_strings_render_as_text(seeded, dashboard, page):
    _, _, x = seeded
    server = dashboard
    page.goto(server.base + "/")
    page.wait_for_selector(f"#runs tbody tr[data-run='{x}']")
    assert XSS in page.inner_text(f"#runs tbody tr[data-run='{x}']")
    page.goto(f"{server.base}/run/{x}")
    wait_until(lambda: page.inner_text("#title"), timeout=20)
    wait_until(lambda: page.inner_text("#config"), timeout=20)
    assert XSS in page.inner_text("#title") and XSS in page.inner_text("#config")
    assert page.query_selector("img[src='x']") is None
    page.wait_for_timeout(500)
    assert page.dialogs == []
    page.screenshot(path=str(ARTIFACTS / "xss.png"))


def test_non_loopback_bind_requires_the_token(root, seeded, server_factory, page):
    server = server_factory(root, host="0.0.0.0")
    token = re.search(r"token=(\S+)", server.banner).group(1)
    for path in ("/", "/api/runs", "/static/runs.js"):
        assert httpx.get(server.base + path).status_code == 401, path
    assert (
        httpx.get(server.base + "/api/runs", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    )
    response = page.goto(server.base + "/")
    assert response.status == 401
    page.goto(f"{server.base}/?token={token}")
    page.wait_for_selector("#runs tbody tr")  # the cookie carries the token for the page's API calls
    page.screenshot(path=str(ARTIFACTS / "token.png"))
    assert server.stop() == 0  # Ctrl-C stops it cleanly


def test_zoom_fetches_detail_and_display_options_fetch_nothing(root, dashboard, page):
    logged = time.time()
    t = Tracker(dir=root, name="long", system=False).start()
    for step in range(1, 20_001):
        t.log({"loss": 1.0 if step == 10_001 else 0.5}, step=step)  # a one-step spike in the middle
    t.finish()
    server = dashboard
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/api/series" in r.url else None)
    page.goto(f"{server.base}/run/{t.id}")
    chart = page.wait_for_selector("#charts .chart[data-points]")
    whole = int(chart.get_attribute("data-points"))
    assert whole < 20_000  # downsampled
    drag_across(page, chart)
    page.mouse.up()
    wait_until(lambda: chart.get_attribute("data-drawn") == "2", timeout=20)
    assert "start=" in requests[-1] and "end=" in requests[-1]  # detail for the zoomed range
    lo, hi = map(float, chart.get_attribute("data-xrange").split())
    assert 5_000 < lo < 10_001 < hi < 15_000  # the dragged range (40% to 60% of the plot), spike inside
    page.screenshot(path=str(ARTIFACTS / "zoomed.png"))
    before = len(requests)
    page.check("#logy")
    page.fill("#smooth", "0.5")
    page.dispatch_event("#smooth", "change")
    page.wait_for_timeout(300)
    assert len(requests) == before  # log scale and smoothing redraw what the page has
    page.select_option("#xaxis", "time")
    wait_until(lambda: chart.get_attribute("data-drawn") == "3", timeout=20)
    assert len(requests) == before + 1 and "x=time" in requests[-1]  # a zoom in steps is dropped
    lo, hi = map(float, chart.get_attribute("data-xrange").split())
    assert logged <= lo < hi <= time.time()  # the zoom in steps was not kept as a date range (in 1970)
    page.screenshot(path=str(ARTIFACTS / "wall-time.png"))


def test_compare_overlays_many_runs_and_zooms(root, dashboard, page):
    ids = []
    for i, name in enumerate(["one", "two", XSS]):
        t = Tracker(dir=root, name=name, system=False, config={"lr": 0.1 * (i + 1), "seed": 0}).start()
        for step in range(1, 5_001):
            t.log({"loss": (i + 1) / step}, step=step)
        t.finish()
        ids.append(t.id)
    server = dashboard
    page.goto(f"{server.base}/compare?ids={','.join(ids)}")
    chart = page.wait_for_selector("#charts .chart[data-traces='3']")
    assert [tr.get_attribute("data-key") for tr in page.query_selector_all("#diff tbody tr")] == ["lr"]
    assert XSS in page.inner_text("#diff thead")
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/api/series" in r.url else None)
    drag_across(page, chart)
    page.mouse.up()
    wait_until(lambda: chart.get_attribute("data-drawn") == "2", timeout=20)
    assert len(requests) == 1 and "start=" in requests[0]  # one request re-fetches all three runs
    lo, hi = map(float, chart.get_attribute("data-xrange").split())
    assert 1_000 < lo < hi < 4_000
    page.screenshot(path=str(ARTIFACTS / "compare-zoomed.png"))
    chart.query_selector(".u-over").dblclick()  # back to the whole range
    wait_until(lambda: chart.get_attribute("data-drawn") == "3", timeout=20)
    assert len(requests) == 2 and "start=" not in requests[1]
    assert chart.get_attribute("data-xrange") == "1 5000" and chart.get_attribute("data-traces") == "3"
    assert page.dialogs == []


def test_a_long_live_run_is_thinned_again_on_the_server(root, dashboard, page, tmp_path):
    go = tmp_path / "go"
    writer = spawn_script(
        """
        import os, sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="long-live", system=False).start()
        t.log({"loss": 1.0}, step=0)
        t.flush()
        print(t.id, flush=True)
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.05)
        for step in range(1, 30_001):  # far more than a chart keeps: M4 sends ~4 points per pixel
            t.log({"loss": 1.0 / step}, step=step)
            if step % 2_000 == 0:
                t.flush()
        time.sleep(60)
    """,
        str(root),
        str(go),
    )
    run_id = writer.stdout.readline().strip()
    server = dashboard
    try:
        page.goto(f"{server.base}/run/{run_id}")
        chart = page.wait_for_selector("#charts .chart[data-points='1']")
        go.touch()
        # drawn a second time: the appended points were replaced by a thinned copy from the server
        wait_until(lambda: chart.get_attribute("data-drawn") == "2", timeout=60)
        assert int(chart.get_attribute("data-points")) < 30_000
    finally:
        writer.kill()


def test_without_the_charting_library_the_pages_say_so(seeded, dashboard, page):
    """A build without npm has no uPlot: a chart page says so where its charts would be, and shows
    the rest (here the script is blocked, as if the server had none to link)."""
    a, b, _ = seeded
    server = dashboard
    page.route(re.compile(r".*/static/vendor/uplot-.*"), lambda route: route.abort())
    page.goto(f"{server.base}/run/{a}")
    wait_until(lambda: "not built in" in page.inner_text("#charts"), timeout=20)
    assert "rebuild with npm available" in page.inner_text("#system")
    assert page.query_selector(".chart") is None
    wait_until(lambda: page.query_selector("#config [data-path='model.layers']") is not None, timeout=20)
    assert page.inner_text("#events").count("checkpoint") == 1
    page.screenshot(path=str(ARTIFACTS / "no-charts.png"), full_page=True)
    page.goto(f"{server.base}/compare?ids={a},{b}")
    wait_until(lambda: "rebuild with npm available" in page.inner_text("#charts"), timeout=20)
    assert [tr.get_attribute("data-key") for tr in page.query_selector_all("#diff tbody tr")] == ["lr"]
    assert page.dialogs == []


def _line_columns(page, chart) -> set[int]:
    """The columns of a chart's plot area where its line's colour shows (``lineColor(0)`` in
    common.js, Tableau's blue #4e79a7, or its anti-aliased edge on white), read from a screenshot:
    what a user sees."""
    page.mouse.move(0, 0)  # off the chart: uPlot draws a dot where the cursor hovers
    image = Image.open(io.BytesIO(chart.query_selector(".u-over").screenshot())).convert("RGB")
    r, g, b = np.moveaxis(np.asarray(image, dtype=np.int16), 2, 0)
    return set(np.nonzero(((b - r > 30) & (b - g > 15)).any(axis=0))[0].tolist())


def test_a_metric_logged_as_none_at_most_steps_draws_its_points(root, dashboard, page):
    """TRL's GRPO trainer, and ``log({"eval/loss": x if evaluating else None})``, log a key as None at
    most steps. Its few points are joined across the Nones, and a point with no neighbour (alone, or
    between NaN gaps) gets a dot: in the chart's pixels, not only in its data."""
    t = Tracker(dir=root, name="sparse", system=False).start()
    for step in range(1, 201):
        t.log(
            {
                "loss": 1.0 / step,
                "eval/loss": 2.0 - step / 100 if step % 50 == 0 else None,
                "eval/once": 0.5 if step == 120 else None,
                "reward": 1.0 if step == 100 else math.nan,
            },
            step=step,
        )
    t.finish()
    server = dashboard
    page.goto(f"{server.base}/run/{t.id}")
    wait_until(lambda: len(page.query_selector_all("#charts .chart[data-drawn]")) == 4, timeout=20)
    charts = {c.get_attribute("data-key"): c for c in page.query_selector_all("#charts .chart")}
    assert [charts[k].get_attribute("data-points") for k in ("eval/loss", "eval/once")] == ["4", "1"]
    plot_width = charts["loss"].query_selector(".u-over").bounding_box()["width"]
    assert len(_line_columns(page, charts["loss"])) > 0.9 * plot_width
    assert len(_line_columns(page, charts["eval/loss"])) > 0.9 * plot_width  # one line, steps 50 to 200
    assert _line_columns(page, charts["eval/once"])
    assert _line_columns(page, charts["reward"])  # a dot between two NaN gaps
    page.screenshot(path=str(ARTIFACTS / "sparse.png"), full_page=True)


def test_config_numbers_print_without_float_noise(root, dashboard, page):
    """Arithmetic's last bits and float32 values widened to float64 are not printed (the exact value
    shows on hover); integers beyond 2**53 print exact (a browser's numbers would round them)."""
    config = {
        "optim": {"lr": 0.1 * 3e-3, "betas": [0.9, np.float32(0.999)]},
        "warmup": np.float32(0.03),
        "seed": 2**63 - 1,
    }
    a = Tracker(dir=root, name="a", system=False, config=config).start()
    a.finish()
    b = Tracker(dir=root, name="b", system=False, config={**config, "optim": {"lr": 2e-4}}).start()
    b.finish()
    server = dashboard
    page.goto(f"{server.base}/run/{a.id}")
    page.wait_for_selector("#config [data-path='seed']")

    def value(path):
        return page.query_selector(f"#config [data-path='{path}'] .cfg-value")

    shown = {p: value(p).inner_text() for p in ("optim.lr", "optim.betas", "warmup", "seed")}
    assert shown == {
        "optim.lr": "0.0003",
        "optim.betas": "[0.9, 0.999]",
        "warmup": "0.03",
        "seed": "9223372036854775807",
    }
    assert value("optim.lr").get_attribute("title") == "0.00030000000000000003"
    assert value("seed").get_attribute("title") is None
    page.goto(f"{server.base}/compare?ids={a.id},{b.id}")
    page.wait_for_selector("#diff tbody tr[data-key='optim.lr']")
    assert page.inner_text("#diff tbody tr[data-key='optim.lr']").split() == ["optim.lr", "0.0003", "0.0002"]


TRAIN = '''
import sys, threading
import numpy as np
from tunetrack import Tracker

released = threading.Event()


class Stalls(np.float64):
    """A scalar whose .item() waits until released, as a GPU scalar's waits for the kernels queued
    before it: it stalls the writer thread, which converts such values."""

    def item(self):
        released.wait(30)
        return float(self)


class Gone:
    """A backend whose tracking server went away."""

    def start(self, run): ...
    def log_config(self, config): ...
    def log(self, rows):
        raise ConnectionError("tracking server went away")
    def finish(self, state): ...


t = Tracker(dir=sys.argv[2], name=sys.argv[1], system=False, max_pending=100, backends=[Gone()]).start()
t.log({"loss": Stalls(1.0)}, step=0)
for step in range(1, 31):  # more than the writer's backlog holds while it waits: some are dropped
    t.log({"loss": 1.0 / step}, step=step)
released.set()
t.finish()
print(t.id)
'''


def test_the_run_page_shows_where_and_how_the_run_ran(root, dashboard, page, tmp_path):
    """What ``tunetrack show`` prints above its tables: hosts, git commit and dirty flag, command line,
    versions, duration, the last values, and the rows that were not kept (dropped by a stalled writer,
    not sent to a backend that went away). The command line holds a run name that is markup: text."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)

    def git(*args):
        config = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=trunk"]
        done = subprocess.run(["git", *config, *args], cwd=repo, check=True, capture_output=True, text=True)
        return done.stdout.strip()

    git("init", "-q")
    git("add", "train.py")
    git("commit", "-q", "-m", "train")
    with open(repo / "train.py", "a") as f:
        f.write("# an edit not committed\n")
    env = {**os.environ, "PYTHONPATH": SRC}
    trained = subprocess.run(
        [sys.executable, "train.py", XSS, str(root)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    run_id = trained.stdout.strip()
    run = open_run(run_id, dir=root)
    counters, summary = run.counters(), run.summary()
    assert counters["dropped_rows"] > 0 and counters["backend_missed/Gone"] > 0
    note_run(run_id, "diverged after the warm-up", dir=root)  # `tunetrack note`
    note_run(run_id, XSS, dir=root)
    server = dashboard
    page.goto(f"{server.base}/run/{run_id}")
    page.wait_for_selector("#summary tbody tr")
    facts = {dd.get_attribute("data-fact"): dd.inner_text() for dd in page.query_selector_all("#facts dd")}
    assert facts["hosts"] == socket.gethostname()
    assert facts["git"] == f"{git('rev-parse', 'HEAD')[:12]} (trunk, dirty)"  # as `tunetrack show` says it
    assert facts["command"] == f"train.py '{XSS}' {root}"
    assert re.search(r"\bpython 3\.\d+", facts["versions"]) and re.search(r"\bnumpy \d", facts["versions"])
    assert re.fullmatch(r"\d+m\d\ds", facts["duration"]) and facts["ended"] != "—"
    assert facts["not kept"] == (
        f"{counters['dropped_rows']} rows dropped (the writer could not keep up); "
        f"{counters['backend_missed/Gone']} rows not sent to Gone"
    )
    notes = [dd.inner_text() for dd in page.query_selector_all("#facts dd[data-fact='note']")]
    assert [n.split(" (")[0] for n in notes] == ["diverged after the warm-up", XSS]  # oldest first, as text
    rows = page.query_selector_all("#summary tbody tr")
    shown = {tr.get_attribute("data-key"): tr.inner_text().split("\t") for tr in rows}
    assert list(shown) == list(summary) == ["loss", "tunetrack/dropped_rows", "tunetrack/backend_missed/Gone"]
    assert shown["loss"][4:] == [str(summary["loss"]["step"]), str(summary["loss"]["count"])]
    assert shown["tunetrack/dropped_rows"][1] == str(counters["dropped_rows"])
    assert XSS in page.inner_text("#title") and page.query_selector("img[src='x']") is None
    page.screenshot(path=str(ARTIFACTS / "overview.png"))
    assert page.dialogs == []


# -- seen with 30 runs of 5,000 steps -----------------------------------------------------------
def test_compare_names_every_run_in_each_chart_legend(root, dashboard, page):
    """Six runs with sweep-like names: each chart's legend shows every one of them (it was cut to
    three lines, three runs named)."""
    ids = []
    for i in range(6):
        t = Tracker(dir=root, name=f"sweep-lr{i}e-4-warmup-cosine-seed{i}", system=False).start()
        for step in range(1, 5_001):
            t.log({"loss": (i + 1) / step}, step=step)
        t.finish()
        ids.append(t.id)
    server = dashboard
    page.goto(f"{server.base}/compare?ids={','.join(ids)}")
    chart = page.wait_for_selector("#charts .chart[data-traces='6']")
    legend = chart.query_selector(".u-legend").bounding_box()
    box = chart.bounding_box()
    entries = chart.query_selector_all(".u-legend .u-series")[1:]  # the first: the x axis
    assert [e.inner_text().split(" (")[0].strip() for e in entries] == [
        f"sweep-lr{i}e-4-warmup-cosine-seed{i}" for i in range(6)
    ]
    for entry in entries:  # each within what the legend and its chart show
        b = entry.bounding_box()
        assert b["y"] + b["height"] <= min(legend["y"] + legend["height"], box["y"] + box["height"]) + 1
    page.screenshot(path=str(ARTIFACTS / "compare-six.png"), full_page=True)


class Gpu:
    """A system metrics source of one GPU's utilization."""

    name = "gpu"

    def __init__(self):
        self.calls = 0

    def sample(self):
        self.calls += 1
        return {"gpu.0.util": 50.0 + self.calls}

    def close(self): ...


def _visible_headings(page) -> list[str]:
    return [h.inner_text() for h in page.query_selector_all("main h2") if h.is_visible()]


def test_a_run_page_leaves_out_the_sections_a_run_has_nothing_for(root, dashboard, page):
    """No system metrics, no events, no samples or images: no "system", "events", "samples" or
    "images" heading over nothing. A run that has them shows them."""
    bare = Tracker(dir=root, name="bare", system=False).start()
    bare.log({"loss": 1.0}, step=1)
    bare.finish()
    gpu = Gpu()
    full = Tracker(dir=root, name="full", system=True, system_interval=0.05, system_sources=[gpu]).start()
    full.log({"loss": 1.0}, step=1)
    full.log_text("samples", "a generation", step=1)
    full.event("checkpoint", step=1, path="ckpt-1")
    wait_until(lambda: gpu.calls >= 3)
    full.finish()
    server = dashboard
    page.goto(f"{server.base}/run/{bare.id}")
    page.wait_for_selector("#charts .chart[data-drawn]")
    assert _visible_headings(page) == ["training", "config"]
    page.goto(f"{server.base}/run/{full.id}")
    page.wait_for_selector("#system .chart[data-drawn]")
    page.wait_for_selector("#sample-table .vrow")
    assert _visible_headings(page) == ["training", "system", "events", "samples", "config"]
    assert "a generation" in page.inner_text("#sample-table")


def test_an_event_reads_the_same_on_the_run_page_and_in_its_report(root, dashboard, page, tmp_path):
    """A health event's NaN value read ``value=null`` on the page and ``value=nan`` in the report:
    both now print the server's one text (``tunetrack show``'s)."""
    t = Tracker(dir=root, name="nan", system=False).start()
    t.log({"loss": 1.0}, step=1)
    t.event("health", step=1, key="loss", value=math.nan, problem="loss_nonfinite")
    t.finish()
    server = dashboard
    page.goto(f"{server.base}/run/{t.id}")
    page.wait_for_selector("#events tbody tr")
    on_page = page.inner_text("#events tbody tr").split("\t")
    assert on_page == ["1", "health", "key=loss, value=nan, problem=loss_nonfinite"]
    report = tmp_path / "report.html"
    report.write_text(httpx.get(f"{server.base}/api/report", params={"run": t.id}).text)
    page.goto(report.as_uri())
    page.wait_for_selector("#events tbody tr")
    assert page.inner_text("#events tbody tr").split("\t")[-1] == on_page[-1]


def test_every_page_has_an_icon_and_no_request_fails(seeded, dashboard, page):
    """Each page links the dashboard's icon: the browser asks for no /favicon.ico (a 404 logged as an
    error on every page)."""
    a, b, _ = seeded
    server = dashboard
    failed, icons = [], []
    page.on("response", lambda r: failed.append((r.status, r.url)) if r.status >= 400 else None)
    page.on("console", lambda m: failed.append((m.text, m.location["url"])) if m.type == "error" else None)
    page.on(
        "request", lambda r: icons.append(r.url) if r.resource_type != "fetch" and "icon" in r.url else None
    )
    for path in ("/", f"/run/{a}", f"/compare?ids={a},{b}"):
        icons.clear()
        page.goto(server.base + path)
        page.wait_for_load_state("load")
        # The browser asks for the page's icon once it has loaded (a call into it lets its events through).
        wait_until(lambda: page.title() and (icons or failed), timeout=20)
        assert failed == [] and icons == [f"{server.base}/static/favicon.svg"], path
    icon = httpx.get(f"{server.base}/static/favicon.svg")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")


def test_the_run_page_asks_for_its_run_once_while_its_scripts_load(seeded, dashboard, page):
    """The run page names its first request in its head (a preload): the browser asks for it while it
    loads the scripts, and the script takes that answer instead of asking again (a URL that differed
    by one escaped character would be asked twice)."""
    a, _, _ = seeded
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "?fold=1" in r.url else None)
    page.goto(f"{dashboard.base}/run/{a}")
    page.wait_for_selector("#title:not(:empty)")
    page.wait_for_load_state("networkidle")
    assert asked == [f"{dashboard.base}/api/runs/{a}?fold=1"]
