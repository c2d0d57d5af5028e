"""The notebook panel's front end (ui/notebook.py's one ES module: uPlot, panel.js and the dashboard's
chart module inlined) in a real browser, fed by a stand-in for the widget's model: no Jupyter needed.
(tests/notebook runs it in JupyterLab.)"""

from __future__ import annotations

import json

from conftest import ARTIFACTS
from helpers import wait_until
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
    esm, css = _front_end()
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
    files = {
        "/": ("text/html", PAGE.format(css=css)),
        "/panel.js": ("text/javascript", esm),
        "/state.json": ("application/json", json.dumps(state)),
    }
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route(
        "http://panel.test/**",
        lambda route: route.fulfill(
            content_type=files[route.request.url.removeprefix("http://panel.test")][0],
            body=files[route.request.url.removeprefix("http://panel.test")][1],
        ),
    )
    page.goto("http://panel.test/")
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
