"""The notebook panel's front end (ui/notebook.py's one ES module: uPlot, panel.js and the dashboard's
chart module inlined) in a real browser, fed by a stand-in for the widget's model: no Jupyter needed.
(tests/notebook runs it in JupyterLab.)"""

from __future__ import annotations

import json

from test_report_cards import TOKEN
from test_report_cards import moe as moe  # the report's run, a fixture of this module too

from conftest import ARTIFACTS, XSS
from support.helpers import wait_until
from tunetrack.ui.notebook import _front_end

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head><body><div id="root"></div>
<script type="module">
import widget from "/panel.js";
const state = await (await fetch("/state.json")).json();
widget.render({{ model: {{ get: key => state[key], on: () => {{}} }}, el: document.getElementById("root") }});
</script></body></html>"""


def test_the_panel_aligns_runs_as_the_dashboard_does(page):
    """Two runs logged at different steps: each line spans the steps the other has (as on the compare
    page), and a NaN stays a gap."""
    state = {
        "runs": [
            {"id": "a", "name": "evens", "project": None, "state": "finished", "step": 6},
            {"id": "b", "name": "odds", "project": None, "state": "running", "step": 5},
        ],
        "series": {
            "a": {"loss": [[2, 4, 6], [1.0, None, 0.5]]},  # None: a NaN, a gap
            "b": {"loss": [[1, 3, 5], [2.0, 1.5, 1.0]]},
        },
    }
    errors = _serve(page, state)
    wait_until(lambda: page.get_attribute("#root", "data-charts") == "1" or errors, timeout=20)
    assert errors == []
    assert page.get_attribute("#root", "data-points") == "6"
    assert "evens (a)" in page.inner_text(".tt-head") and "odds (b)" in page.inner_text(".tt-head")
    data = page.evaluate(
        "() => document.querySelector('.tt-chart').chart.data.map(s => [...s].map(v => v === undefined ? 'span' : v))"
    )
    assert data == [
        [1, 2, 3, 4, 5, 6],
        ["span", 1.0, "span", None, "span", 0.5],
        [2.0, "span", 1.5, "span", 1.0, "span"],
    ]
    assert page.query_selector_all(".tt-chart canvas")
    page.screenshot(path=str(ARTIFACTS / "panel.png"))


def test_the_panel_shows_the_latest_samples(page, root):
    """The kernel's ``samples`` (``samples_text`` of a real run, as ui/notebook.py sends it) drawn under
    the charts: the last step's first rows, long text cut, user text as text."""
    from tunetrack import Tracker
    from tunetrack.reader import open_run
    from tunetrack.reader.as_text import samples_text
    from tunetrack.ui.notebook import SAMPLE_CHARS, SAMPLE_ROWS

    t = Tracker(dir=root, name="grpo", system=False).start()
    for step in (1, 2):
        t.log({"loss": 1.0 / step}, step=step)
        rows = [{"prompt": XSS, "completion": f"{i} " + "z" * 900, "reward": i / 2} for i in range(12)]
        t.log_table("completions", rows, step=step)
    t.finish()
    run = open_run(t.id, dir=root)
    state = {
        "runs": [{"id": run.id, "name": run.name, "project": None, "state": "finished", "step": 2}],
        "series": {},
        "samples": [
            {"run": run.id, "name": run.name, **samples_text(run, rows=SAMPLE_ROWS, chars=SAMPLE_CHARS)}
        ],
    }
    errors = _serve(page, state)
    wait_until(lambda: page.get_attribute("#root", "data-samples") == str(SAMPLE_ROWS) or errors, timeout=20)
    assert errors == []
    assert (
        page.inner_text(".tt-sample-title")
        == f"completions at step 2 ({SAMPLE_ROWS} of 12 rows; samples at 2 steps)"
    )
    assert page.locator(".tt-sample thead th").all_inner_texts() == ["prompt", "completion", "reward"]
    cells = page.locator(".tt-sample tbody tr").nth(3).locator("td").all_inner_texts()
    assert cells[0] == XSS and cells[2] == "1.5"
    assert cells[1] == "3 " + "z" * (SAMPLE_CHARS - 2) + f"… [{902 - SAMPLE_CHARS} more characters]"
    assert page.query_selector("img") is None
    page.screenshot(path=str(ARTIFACTS / "panel-samples.png"))


def test_a_run_of_many_keys_shows_a_family_card_and_its_distributions(page, root):
    """4 x 16 MoE keys, a loss and a histogram a step (a real run): the panel charts the loss, not 12
    keys of the family; the family is one card (the band, the heatmap: many.js) and the histogram key
    a heatmap of its distributions (dist.js), as ``Panel.refresh`` sends them (``_cards``)."""
    import numpy as np

    from tunetrack import Histogram, Tracker
    from tunetrack.reader import open_run
    from tunetrack.reader.families import families
    from tunetrack.ui.notebook import _cards, _main_keys, _points

    rng = np.random.default_rng(1)
    with Tracker(dir=root, name="moe", system=False, console=False) as t:
        for step in range(1, 31):
            row = {
                f"moe/layer{i}/expert{e}/load": (i * 7 + e * 3 + step) % 11 / 10
                for i in range(4)
                for e in range(16)
            }
            t.log({**row, "loss": 1.0 / step, "grad": Histogram(rng.normal(step / 10, 1, 200))}, step=step)
    run = open_run(t.id, dir=root)
    groups = families(run.keys())
    assert list(groups) == ["moe/layer*/expert*/load"]
    keys = _main_keys([run], set(groups["moe/layer*/expert*/load"]))
    assert keys == ["loss"]
    state = {
        "runs": [{"id": run.id, "name": run.name, "project": None, "state": "finished", "step": 30}],
        "series": {run.id: {"loss": _points(run.series("loss"))}},
        "cards": _cards([run], groups),
    }
    errors = _serve(page, state)
    wait_until(lambda: page.get_attribute("#root", "data-cards") == "2" or errors, timeout=20)
    assert errors == []
    card = page.wait_for_selector(".family[data-drawn]")
    assert card.query_selector(".family-title").inner_text() == "moe/layer*/expert*/load · 64 keys"
    assert card.query_selector(".family-band .uplot canvas") is not None
    assert card.query_selector("canvas.heat-canvas").get_attribute("data-rows") == "32"  # 2 keys a row: <= 40
    dist = page.wait_for_selector(".distribution[data-drawn]")
    assert dist.get_attribute("data-key") == "grad" and "30 steps" in dist.inner_text()
    assert dist.query_selector("canvas.heat-canvas").get_attribute("data-cols") == "30"
    assert page.get_attribute("#root", "data-charts") == "1"
    page.screenshot(path=str(ARTIFACTS / "panel-cards.png"), full_page=True)


def _serve(page, state) -> list[str]:
    """The panel's page, module and ``state`` served to ``page``; the page's script errors."""
    esm, css = _front_end()
    files = {
        "/": ("text/html", PAGE.format(css=css)),
        "/panel.js": ("text/javascript", esm),
        "/state.json": ("application/json", json.dumps(state)),
    }
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route(
        "http://panel.test/**",
        lambda route: route.fulfill(
            content_type=files[route.request.url.removeprefix("http://panel.test")][0],
            body=files[route.request.url.removeprefix("http://panel.test")][1],
        ),
    )
    page.goto("http://panel.test/")
    return errors


def test_the_panels_samples_colour_tokens_and_show_a_trajectory_as_turns(page, moe):
    """The report's run (test_report_cards's ``moe``: tokens with their log-probabilities, one hostile,
    and a trajectory rewarded per turn) in the panel: the completion's tokens on the colours of their
    values, the trajectory as turns with its rewards, every user string as text."""
    from tunetrack.reader import list_runs
    from tunetrack.reader.as_text import samples_text
    from tunetrack.ui.notebook import SAMPLE_CHARS, SAMPLE_ROWS

    path, _ = moe
    (run,) = list_runs(dir=path.parent / "runs")
    state = {
        "runs": [{"id": run.id, "name": run.name, "project": None, "state": "finished", "step": 50}],
        "series": {},
        "samples": [
            {"run": run.id, "name": run.name, **samples_text(run, rows=SAMPLE_ROWS, chars=SAMPLE_CHARS)}
        ],
    }
    errors = _serve(page, state)
    wait_until(lambda: page.get_attribute("#root", "data-samples") == "3" or errors, timeout=20)
    assert errors == []
    first = page.locator(".tt-sample tbody tr").first
    tokens = first.locator(".token-text .tok")
    assert tokens.count() == 6 and tokens.nth(3).inner_text() == TOKEN  # a token as text
    colours = {tokens.nth(i).evaluate("e => getComputedStyle(e).backgroundColor") for i in range(5)}
    assert len(colours) >= 3  # coloured by their log-probabilities, not one flat colour
    assert first.locator(".tok.no-value").count() == 1  # the NaN: no value, outlined
    chat = first.locator("td.chat")
    assert (
        chat.locator("details.msg").count() == 3 and "0.5" in chat.locator(".reward-badge").first.inner_text()
    )
    assert page.dialogs == [] and page.query_selector("img") is None
    page.screenshot(path=str(ARTIFACTS / "panel-tokens.png"))
