"""The report of a run of many keys, distributions and token-level samples (issue 35), opened from disk
in a real browser: a family of keys is one card (the band of its percentiles, which are NumPy's of
the values logged, and a heatmap), a key logged as ``tunetrack.Histogram`` a distribution card, and
the samples' tokens coloured by their values and a trajectory shown as turns, all drawn by the run
page's own modules (many.js, dist.js, sampletext.js) inlined into the file; run text stays text."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from test_samples_tokens import HOSTILE

from conftest import ARTIFACTS, XSS
from support.helpers import embedded, wait_until
from tunetrack import Histogram, Tracker
from tunetrack.reader import open_run
from tunetrack.ui import report

LAYERS, EXPERTS, STEPS = 4, 16, 50
GLOB = "moe/layer*/expert*/load"
HIST = "grad/layer0"
#: a token that would end the data block and inject an element, were it not escaped and shown as text
TOKEN = f"</script>{XSS}"


def load(layer: int, expert: int, step: int) -> float:
    """An expert's load: a pattern of eleven values, one expert running hot from step 31 on."""
    return ((layer * 7 + expert * 3 + step) % 11) / 10 + (
        5.0 if (layer, expert) == (2, 9) and step > 30 else 0
    )


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    """(the report's path, its HTML): a run written by the real Tracker, 4 x 16 MoE keys and a loss over
    50 steps, a histogram a step, and at its last step a table of samples with tokens and their
    log-probabilities (one token hostile) and a trajectory of tool calls rewarded per turn."""
    root = tmp_path_factory.mktemp("report-cards") / "runs"
    rng = np.random.default_rng(3)
    with Tracker(dir=root, name="moe", system=False, console=False) as t:
        for step in range(1, STEPS + 1):
            row = {
                f"moe/layer{i}/expert{e}/load": load(i, e, step)
                for i in range(LAYERS)
                for e in range(EXPERTS)
            }
            t.log({**row, "loss": 2.0 / step, HIST: Histogram(rng.normal(step / 10, 1.0, 500))}, step=step)
        tokens = ["The", " answer", " is", TOKEN, " 391", "."]
        t.log_table(
            "completions",
            [
                {
                    "prompt": f"question {i} {XSS}",
                    "trajectory": HOSTILE,
                    "tokens": tokens,
                    "logprob": [-0.05, -1.5, -0.2, -4.0, -0.01 * i, float("nan")],
                    "reward": i / 2,
                }
                for i in range(3)
            ],
            step=STEPS,
        )
    out = root.parent / "report.html"
    html = report.render([open_run(t.id, dir=root)])
    out.write_text(html)
    return out, html


def test_a_family_is_one_card_whose_band_is_numpys_percentiles(moe):
    _, html = moe
    data = embedded(html)
    assert [c["key"] for c in data["charts"]] == ["loss"]  # no chart per MoE key
    (card,) = data["families"]
    assert card["pattern"] == GLOB and card["keys"] == LAYERS * EXPERTS
    assert card["first"] == "moe/layer0/expert0/load" and card["last"] == "moe/layer3/expert15/load"
    raw = np.array(
        [[load(i, e, s) for i in range(LAYERS) for e in range(EXPERTS)] for s in range(1, STEPS + 1)]
    )
    assert card["steps"] == list(range(1, STEPS + 1))
    for name, q in (("p5", 5), ("p50", 50), ("p95", 95), ("max", 100)):
        assert card["band"][name] == pytest.approx(np.percentile(raw, q, axis=1).tolist(), rel=1e-12), name
    heat = card["heat"]
    assert len(heat["values"]) == len(heat["rows"]) <= report.CARD_ROWS
    assert sum(n for _, n in heat["rows"]) == LAYERS * EXPERTS
    assert heat["high"] == pytest.approx(raw.max()) and heat["low"] == pytest.approx(raw.min())
    # the summary folds the family (past SUMMARY_SHOWN keys) as the overview does
    assert data["runs"][0]["summary"][GLOB]["keys"] == LAYERS * EXPERTS
    (dist,) = data["distributions"]
    assert dist["key"] == HIST and dist["steps"] == STEPS and len(dist["counts"]) == STEPS
    assert sum(dist["counts"][0]) == pytest.approx(500, rel=1e-3)
    (table,) = data["samples"]
    first = table["rows"][0]
    assert first["tokens"]["tokens"][3] == TOKEN and first["tokens"]["values"]["logprob"][5] is None
    assert first["chats"][str([c for c, _ in table["columns"]].index("trajectory"))][1]["reward"] == 0.5
    assert TOKEN not in html and XSS not in html  # escaped inside the data block


def _heat_colours(canvas) -> int:
    image = Image.open(io.BytesIO(canvas.screenshot())).convert("RGB")
    return len({tuple(p) for p in np.asarray(image).reshape(-1, 3)[::5].tolist()})


@pytest.mark.parametrize("width", [1024, 1440])
def test_the_file_draws_the_cards_and_the_tokens(moe, browser, width):
    out, _ = moe
    context = browser.new_context(viewport={"width": width, "height": 900}, offline=True)
    page = context.new_page()
    errors, dialogs = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)  # CSP refusals too
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(out.as_uri())
        card = page.wait_for_selector(".family[data-drawn]", timeout=20_000)
        assert len(page.query_selector_all(".family")) == 1
        assert card.query_selector(".family-title").inner_text() == f"{GLOB} · 64 keys"
        assert card.query_selector(".family-band .uplot canvas") is not None
        assert card.query_selector(".family-band").get_attribute("data-points") == str(STEPS)
        assert all(
            n in card.query_selector(".family-band .u-legend").inner_text() for n in ("p5", "p95", "max")
        )
        assert _heat_colours(card.query_selector("canvas.heat-canvas")) > 5  # painted, not blank
        assert "layer0/expert0" in card.query_selector(".heat-steps").inner_text()
        page.wait_for_selector(".chart[data-key='loss'][data-drawn]")
        assert len(page.query_selector_all("#charts > .chart")) == 2  # the loss and the family card

        dist = page.wait_for_selector(".distribution[data-drawn]")
        assert dist.get_attribute("data-key") == HIST and f"{STEPS} steps" in dist.inner_text()
        assert _heat_colours(dist.query_selector("canvas")) > 5
        dist.query_selector("button[data-view='ridgeline']").click()
        wait_until(lambda: dist.get_attribute("data-view") == "ridgeline")

        views = page.query_selector_all("#samples .tokens")
        assert len(views) == 3  # a row each
        toks = views[0].query_selector_all(".tok")
        assert [t.inner_text() for t in toks][3] == TOKEN  # the hostile token as text
        colours = {t.evaluate("e => e.style.backgroundColor") for t in toks[:5]}
        assert len(colours) >= 4  # coloured by their log-probabilities
        assert "no-value" in (toks[5].get_attribute("class") or "")  # NaN: no colour
        chat = page.query_selector("#samples td.chat")
        assert (
            chat is not None and len(chat.query_selector_all("details.msg")) == 3
        )  # the tool's result under its call
        assert "0.5" in chat.query_selector(".reward-badge").inner_text()
        assert XSS in chat.inner_text()
        assert page.query_selector_all("img") == [] and dialogs == []
        assert errors == []
        page.screenshot(path=str(ARTIFACTS / f"report-cards-{width}.png"), full_page=True)
    finally:
        context.close()


def test_a_run_of_10000_keys_makes_a_small_report(tmp_path):
    """40 x 250 MoE keys over 200 steps: one family card fitted to its width, the summary folded; the
    file stays about 220 kB (uPlot and the page's code included), not a chart per key."""
    root = tmp_path / "runs"
    with Tracker(dir=root, name="moe", system=False, console=False) as t:
        for step in range(1, 201):
            row = {f"moe/layer{i}/expert{e}/load": load(i, e, step) for i in range(40) for e in range(250)}
            t.log({**row, "loss": 2.0 / step}, step=step)
    html = report.render([open_run(t.id, dir=root)])
    size = len(html.encode())
    print(f"\nthe report of a 10,000-key x 200-step run: {size:,} bytes")
    data = embedded(html)
    assert [c["key"] for c in data["charts"]] == ["loss"] and len(data["families"]) == 1
    assert len(data["runs"][0]["summary"]) == 2
    assert size < 300_000
