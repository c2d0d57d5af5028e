"""The runs table in a real browser: its metric columns (the runs' loss-like keys, or those the URL
names), and a store of more runs than a screen holds, of which only those on screen are drawn."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from conftest import ARTIFACTS
from support.helpers import wait_until
from tunetrack import Tracker


def _table(page) -> tuple[list[str | None], dict[str, list[str]]]:
    """The header's sort keys (``<key>:<agg>`` for a metric column) and each drawn row's cells."""
    head = [th.get_attribute("data-sort") for th in page.query_selector_all("#runs thead th")]
    rows = {
        tr.get_attribute("data-run"): [td.inner_text() for td in tr.query_selector_all("td")]
        for tr in page.query_selector_all("#runs tbody tr")
    }
    return head, rows


def _metrics(page) -> list[str]:
    return [s.removesuffix(":last") for s in _table(page)[0] if s and s.endswith(":last")]


def test_metric_columns_default_to_the_loss_like_keys_and_are_kept_in_the_url(root, server_factory, page):
    trl = Tracker(dir=root, name="trl", system=False).start()
    trl.log({"train/loss": 0.5, "eval/loss": 0.75, "train/grad_norm": 1.5}, step=1)
    trl.finish()
    hf = Tracker(dir=root, name="hf", system=False).start()
    hf.log({"loss": 0.25, "eval_loss": 0.375, "learning_rate": 1e-4}, step=1)
    hf.finish()
    server = server_factory(root)
    page.goto(server.base + "/")
    page.wait_for_selector(f"#runs tbody tr[data-run='{trl.id}']")
    assert _metrics(page) == ["loss", "train/loss", "eval_loss", "eval/loss"]  # training first

    def cell(run_id, key):
        head, rows = _table(page)
        return rows[run_id][head.index(f"{key}:last")]

    assert [cell(trl.id, k) for k in _metrics(page)] == ["—", "0.5", "—", "0.75"]
    assert [cell(hf.id, k) for k in _metrics(page)] == ["0.25", "—", "0.375", "—"]
    options = [o.get_attribute("value") for o in page.query_selector_all("#metric-keys option")]
    # every key: one shown as its last value can be added as its min, max or best (#addagg)
    assert options == ["eval/loss", "eval_loss", "learning_rate", "loss", "train/grad_norm", "train/loss"]

    page.fill("#addkey", "train/grad_norm")
    page.press("#addkey", "Enter")
    wait_until(lambda: "train/grad_norm" in _metrics(page) and cell(trl.id, "train/grad_norm") == "1.5")
    for key in ("loss", "eval_loss"):
        page.click(f"#runs th[data-sort='{key}:last'] .drop")
    wait_until(lambda: _metrics(page) == ["train/loss", "eval/loss", "train/grad_norm"])
    assert parse_qs(urlsplit(page.url).query) == {"key": ["train/loss", "eval/loss", "train/grad_norm"]}
    page.screenshot(path=str(ARTIFACTS / "runs-columns.png"))

    page.reload()  # the columns come from the URL
    page.wait_for_selector(f"#runs tbody tr[data-run='{trl.id}']")
    assert _metrics(page) == ["train/loss", "eval/loss", "train/grad_norm"]
    assert cell(trl.id, "train/grad_norm") == "1.5" and cell(hf.id, "train/grad_norm") == "—"
    grad_norm = "#runs th[data-sort='train/grad_norm:last'] .metric-head span"
    page.click(grad_norm)  # a run without the key sorts last
    wait_until(lambda: list(_table(page)[1]) == [trl.id, hf.id])
    page.click(grad_norm)
    wait_until(lambda: list(_table(page)[1]) == [trl.id, hf.id])  # either way

    for key in _metrics(page):
        page.click(f"#runs th[data-sort='{key}:last'] .drop")
    wait_until(lambda: _metrics(page) == [])
    page.reload()  # none chosen is not the default
    page.wait_for_selector(f"#runs tbody tr[data-run='{trl.id}']")
    assert _metrics(page) == [] and len(_table(page)[1][trl.id]) == 9
    assert page.dialogs == []


def test_only_the_rows_on_screen_are_drawn(root, server_factory, page):
    """More runs than a screen holds (the same code serves 10,000: benchmarks/ui_bench.py): the DOM
    holds the rows on screen and a few either side, the page scrolls as far as all of them, and a
    filter, a sort and a ticked run work across every run, drawn or not."""
    ids = []
    for i in range(120):
        t = Tracker(dir=root, name=f"run-{i:03d}", system=False).start()
        t.log({"loss": 1.0 / (i + 1)}, step=1)
        t.finish()
        ids.append(t.id)  # the last is the newest: first in the table
    server = server_factory(root)
    page.goto(server.base + "/")
    page.wait_for_selector("#runs tbody tr[data-run]")
    assert page.inner_text("#status") == "120 of 120 runs"
    drawn = list(_table(page)[1])
    assert drawn[0] == ids[-1] and len(drawn) < 60  # a screen of rows (900 px) and ten below
    rows = page.query_selector_all("#runs tbody tr")
    assert len({round(tr.bounding_box()["height"], 1) for tr in rows}) == 1  # every row one line
    height = rows[0].bounding_box()["height"]
    assert page.evaluate("document.documentElement.scrollHeight") > 120 * height  # room for every row

    page.mouse.move(600, 500)
    page.mouse.wheel(0, 120 * height)  # to the bottom: the oldest run is on screen
    wait_until(lambda: ids[0] in _table(page)[1])
    oldest = page.query_selector(f"#runs tbody tr[data-run='{ids[0]}']").bounding_box()
    assert oldest["y"] >= 0 and oldest["y"] + oldest["height"] <= 900
    assert len(_table(page)[1]) < 60 and ids[-1] not in _table(page)[1]
    page.check(f"#runs tbody tr[data-run='{ids[1]}'] input")
    page.screenshot(path=str(ARTIFACTS / "runs-scrolled.png"))
    page.mouse.wheel(0, -120 * height)  # to the top, where that row is not drawn, and back
    wait_until(lambda: ids[-1] in _table(page)[1] and ids[1] not in _table(page)[1])
    page.mouse.wheel(0, 120 * height)
    wait_until(lambda: ids[1] in _table(page)[1])
    assert page.is_checked(f"#runs tbody tr[data-run='{ids[1]}'] input")

    page.fill("#search", "run-07")  # rows far down the table, before any is drawn
    wait_until(lambda: page.inner_text("#status") == "10 of 120 runs")
    assert list(_table(page)[1]) == ids[79:69:-1]
    page.fill("#search", "")
    page.click("#runs th[data-sort='name']")  # by name: run-000 first
    wait_until(lambda: list(_table(page)[1])[:1] == [ids[0]])
    assert page.dialogs == []
