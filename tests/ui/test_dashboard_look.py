"""The dashboard as a demanding user saw it in Chromium (shared/research/dashboard-look-2026-11-26.md,
defects 1 to 10): each test reproduces one defect on a store shaped like the runs users have (the
Transformers callback's ``loss``, ``eval_loss``, ``args.*`` and ``peft_config.default.*`` beside
TRL-style ``train/loss`` runs, a run that died of a multi-line CUDA error, a long console, two runs
with tables of samples) and fails on the pages as they were."""

from __future__ import annotations

import math
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import ARTIFACTS
from support.helpers import Server, run_script, spawn_script, wait_until
from tunetrack import Tracker

ON = {"TUNETRACK_CONSOLE": "1"}
LONG_NAME = "sft-" + "llama-3.2-1b-instruct-ultrachat-200k-lora-r16-alpha32-dropout0.05-" + "lr3e-4-seed0"
MODELS = ("Qwen/Qwen2.5-0.5B-Instruct", "meta-llama/Llama-3.2-1B")
#: what PyTorch raises when a card runs out of memory: several lines, the cause on the first
OOM = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
    "1.06 GiB is free.\nOf the allocated memory 74.52 GiB is allocated by PyTorch.\n"
    "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
)


def _trainer_run(root: Path, name: str, lr: float, r: int, seed: int) -> str:
    """A run as the Transformers callback records it (``loss``, ``eval_loss``, ``args.*``, ``peft_config``)."""
    config = {
        "args": {"learning_rate": lr, "seed": seed, "output_dir": f"out/{name}", "run_name": name},
        "peft_config": {"default": {"r": r, "lora_alpha": 2 * r}},
        "model": "meta-llama/Llama-3.2-1B",
    }
    with Tracker(project="chat-sft", name=name, dir=root, system=False, config=config) as t:
        for step in range(1, 41):
            t.log({"loss": 2.0 / step**0.5 + lr * 100 + seed / 100}, step=step)
            if step % 10 == 0:
                t.log({"eval_loss": 1.5 / step**0.3 + lr * 100}, step=step)
    return t.id


def _trl_run(root: Path, name: str, lr: float, r: int, seed: int, extra: str | None = None) -> str:
    """A TRL-style run (``train/loss``, ``eval/loss``, ``train/lr``); ``extra``: a key only it logs."""
    config = {
        "lr": lr,
        "lora": {"r": r},
        "seed": seed,
        "model": MODELS[seed % 2],
        "dataset": "ultrachat_200k",
    }
    with Tracker(project="sweep", name=name, dir=root, system=False, config=config) as t:
        for step in range(1, 61):
            row = {"train/loss": 2.0 * 0.97**step + r / 100 + seed / 50, "train/lr": lr}
            if step % 20 == 0:
                row["eval/loss"] = 1.0 + 0.9**step + r / 200
            if extra:
                row[extra] = step * (1 + seed)
            t.log(row, step=step)
    return t.id


def _grpo_run(root: Path, name: str, answer: str) -> str:
    """A run with a ``completions`` table at steps 1 and 2, two prompts, two completions each."""
    config = {"lr": 1e-6, "chat_template": "<script>alert(1)</script>{{ messages }}"}
    with Tracker(project="rl", name=name, dir=root, system=False, config=config) as t:
        for step in (1, 2):
            t.log({"reward": 0.5 * step}, step=step)
            rows = [
                {"prompt": prompt, "completion": f"step {step} try {g}: {answer}", "reward": float(g)}
                for prompt in ("What is six times seven?", "Name a prime above 10.")
                for g in range(2)
            ]
            t.log_table("completions", rows, step=step)
    return t.id


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("look") / "runs"
    ids = {}
    for i, (lr, r, seed) in enumerate([(3e-4, 16, 0), (3e-4, 16, 1), (1e-4, 8, 0)]):
        ids[f"hf{i}"] = _trainer_run(root, LONG_NAME if i == 0 else f"sft-lr{lr}-r{r}-s{seed}", lr, r, seed)
    for i, (lr, r, seed) in enumerate([(1e-5, 8, 0), (1e-4, 8, 1), (1e-4, 32, 0)]):
        ids[f"trl{i}"] = _trl_run(
            root, f"lr{lr:g}-r{r}-s{seed}", lr, r, seed, extra=f"only/{i}" if i < 2 else None
        )
    ids["grpo"] = _grpo_run(root, "grpo", "42")
    ids["grpo-b"] = _grpo_run(root, "grpo-b", "41")
    failed = run_script(
        """
        import sys
        from tunetrack import Tracker
        with Tracker(dir=sys.argv[1], project="rl", name="failed-oom", system=False) as t:
            print(t.id, flush=True)
            for step in range(1, 6):
                t.log({"train/loss": 1.0 / step}, step=step)
            raise RuntimeError(sys.argv[2])
        """,
        str(root),
        OOM,
        env=ON,
        check=False,
    )
    ids["failed"] = failed.stdout.split()[0]
    chatty = run_script(
        """
        import sys
        from tunetrack import Tracker
        with Tracker(dir=sys.argv[1], project="rl", name="chatty", system=False) as t:
            print(t.id, flush=True)
            for step in range(1, 1201):
                t.log({"train/loss": 1.0 / step}, step=step)
                print(f"step {step} of 1200", flush=True)
            print("the last line", flush=True)
        """,
        str(root),
        env=ON,
    )
    ids["chatty"] = chatty.stdout.split()[0]
    return root, ids


@pytest.fixture(scope="module")
def server(store):
    s = Server(store[0])
    yield s
    s.stop()


def _sized(page, width: int, height: int = 900):
    page.set_viewport_size({"width": width, "height": height})
    return page


# -- 1: the run-name column keeps a readable width ----------------------------------------------------
@pytest.mark.parametrize("width", [1024, 1440])
@pytest.mark.parametrize(
    "query", ["", "?project=sweep", "?project=sweep&key=train/loss&key=eval/loss:min&key=train/lr"]
)
def test_1_the_run_name_keeps_a_readable_width(store, server, page, width, query):
    _sized(page, width).goto(f"{server.base}/{query}")
    page.wait_for_selector("#runs tbody tr[data-run]")
    cells = page.query_selector_all("#runs tbody tr[data-run] td:nth-child(3)")
    assert cells
    widths = [c.bounding_box()["width"] for c in cells]
    assert min(widths) >= 160, widths
    long = page.query_selector(f"#runs tbody tr[data-run='{store[1]['hf0']}'] td:nth-child(3)")
    if long is not None:  # cut short with an ellipsis, the whole name on hover
        assert long.get_attribute("title") == LONG_NAME
    page.screenshot(path=str(ARTIFACTS / f"look-1-names-{width}{'-sweep' if query else ''}.png"))


# -- 2: the console opens at its last line and follows -----------------------------------------------
def _console(page) -> dict[str, float]:
    return page.eval_on_selector(
        "#logs",
        "b => ({top: b.scrollTop, height: b.scrollHeight, client: b.clientHeight, lines: b.children.length})",
    )


def _at_bottom(page) -> bool:
    c = _console(page)
    return c["height"] > c["client"] and c["top"] + c["client"] >= c["height"] - 4


def test_2_the_console_opens_at_its_last_line(store, server, page):
    page.goto(f"{server.base}/run/{store[1]['chatty']}")
    page.wait_for_selector("#logs-section:not([hidden]) #logs .line")
    wait_until(lambda: _at_bottom(page), timeout=10)
    last = page.locator("#logs .line .text").last
    assert last.inner_text() == "the last line" and last.is_visible()


def test_2_the_console_follows_a_live_run_until_scrolled_up(root, server_factory, page):
    writer = spawn_script(
        """
        import sys, time
        from tunetrack import Tracker
        t = Tracker(dir=sys.argv[1], name="printing", system=False).start()
        print(t.id, flush=True)
        for step in range(1, 3000):
            t.log({"loss": 1.0 / step}, step=step)
            print(f"step {step}", flush=True)
            time.sleep(0.02)
        t.finish()
        """,
        str(root),
        env=ON,
    )
    run_id = writer.stdout.readline().strip()
    server = server_factory(root)
    try:
        page.goto(f"{server.base}/run/{run_id}")
        page.wait_for_selector("#logs-section:not([hidden]) #logs .line")
        wait_until(lambda: _console(page)["height"] > _console(page)["client"] + 100, timeout=30)
        seen = _console(page)["lines"]
        wait_until(lambda: _console(page)["lines"] > seen + 20 and _at_bottom(page), timeout=30)
        page.hover("#logs")
        page.mouse.wheel(0, -300)  # the user scrolls up to read: the box stays where they left it
        wait_until(lambda: not _at_bottom(page), timeout=10)
        top, seen = _console(page)["top"], _console(page)["lines"]
        wait_until(lambda: _console(page)["lines"] > seen + 20, timeout=30)
        assert abs(_console(page)["top"] - top) < 2
        page.mouse.wheel(0, 100_000)  # back at the bottom: followed again
        seen = _console(page)["lines"]
        wait_until(lambda: _console(page)["lines"] > seen + 20 and _at_bottom(page), timeout=30)
    finally:
        writer.kill()


# -- 3 and 4: the failure where users scan, the traceback with its line breaks ------------------------
def test_3_the_failure_shows_in_the_table_and_the_header(store, server, page):
    failed = store[1]["failed"]
    page.goto(f"{server.base}/?project=rl")
    cell = page.wait_for_selector(f"#runs tbody tr[data-run='{failed}'] td:nth-child(2)")
    assert cell.inner_text() == "failed: CUDA out of memory on rank 0"
    assert cell.get_attribute("title") == "failed: CUDA out of memory on rank 0"
    assert cell.query_selector(".state").get_attribute("class") == "state state-failed"
    page.goto(f"{server.base}/run/{failed}")
    page.wait_for_selector("#facts dd")
    assert page.inner_text("header .state") == "failed: CUDA out of memory on rank 0"
    assert page.get_attribute("header .state", "class") == "state state-failed"
    fact = page.query_selector("#facts [data-fact='state'] .state")
    assert fact.inner_text() == "failed: CUDA out of memory on rank 0"
    assert fact.get_attribute("class") == "state state-failed"  # a colour, not the text as a class name


def test_4_the_traceback_keeps_its_line_breaks(store, server, page):
    page.goto(f"{server.base}/run/{store[1]['failed']}")
    page.wait_for_selector("#traceback:has-text('CUDA out of memory')")
    lines = page.inner_text("#traceback").splitlines()
    assert lines[0] == "Traceback (most recent call last):" and len(lines) >= 5
    assert "Of the allocated memory 74.52 GiB is allocated by PyTorch." in lines
    style = page.eval_on_selector(
        "#traceback",
        "e => { const s = getComputedStyle(e); return [s.whiteSpace, s.fontFamily, s.overflowX]; }",
    )
    assert style[0] == "pre-wrap" and "monospace" in style[1] and style[2] == "auto"


# -- 5 and 13: a name no run has is an error line; an empty result says so -----------------------------
def _status(page) -> str:
    return page.inner_text("#status")


def test_5_the_filter_box_says_what_no_run_has(store, server, page):
    page.goto(f"{server.base}/")
    page.wait_for_selector("#runs tbody tr[data-run]")
    every = len(page.query_selector_all("#runs tbody tr[data-run]"))
    for expression, hint in [
        ("lrx < 1e-4", "did you mean config.lr"),
        ("state = failed", 'did you mean "failed"'),
    ]:
        page.fill("#search", expression)
        page.wait_for_selector(f"#where-error:has-text('{hint}')")
        assert page.is_visible("#where-error")
        assert len(page.query_selector_all("#runs tbody tr[data-run]")) == every  # the rows it showed
    page.fill("#search", "config.lr > 1")  # well formed, and no run matches: the table says so
    empty = page.wait_for_selector("#runs tbody tr.empty")
    assert "no runs match config.lr > 1" in empty.inner_text()
    assert page.inner_text("#where-error") == ""
    empty.query_selector("button").click()  # clears the filter
    wait_until(lambda: len(page.query_selector_all("#runs tbody tr[data-run]")) == every)
    assert page.input_value("#search") == "" and "where" not in parse_qs(urlsplit(page.url).query)


def test_13_the_group_boxes_say_what_no_run_has(store, server, page):
    page.goto(f"{server.base}/?project=sweep&group=lr")
    page.wait_for_selector("#runs tbody tr.group")
    groups = len(page.query_selector_all("#runs tbody tr.group"))
    page.fill("#groupby", "lora.rank")
    page.press("#groupby", "Enter")
    page.wait_for_selector("#group-error:has-text('did you mean config.lora.r')")
    assert len(page.query_selector_all("#runs tbody tr.group")) == groups  # the groups it showed
    assert page.inner_text("#where-error") == ""  # beside the box it is about
    page.fill("#groupby", "lora.r")
    page.press("#groupby", "Enter")
    wait_until(lambda: page.inner_text("#group-error") == "" and "groups of" in _status(page))
    assert page.inner_text("#status").startswith("2 groups of 3 runs")
    page.fill("#search", "config.seed = 1")
    wait_until(lambda: _status(page).startswith("1 group of 1 run "))  # one, not "1 groups"

    ids = ",".join(store[1][f"trl{i}"] for i in range(3))
    page.goto(f"{server.base}/compare?ids={ids}&group=lora.rank")
    error = page.wait_for_selector("#groups-error:has-text('did you mean config.lora.r')")
    assert error.is_visible()
    assert page.locator(".chart:has-text('did you mean')").count() == 0  # said once, not per chart


# -- 6 and 7: compact legends, one colour per run ----------------------------------------------------
def test_6_legends_stay_a_small_part_of_the_card(tmp_path, server_factory, page):
    root = tmp_path / "runs"
    ids = [
        _trl_run(root, f"{'very-long-descriptive-run-name-' * 3}{i}", lr, r, i)
        for i, (lr, r) in enumerate([(1e-5, 8), (3e-5, 16), (1e-4, 32)] * 4)
    ]
    server = server_factory(root)
    _sized(page, 1440).goto(f"{server.base}/compare?ids={','.join(ids)}")
    page.wait_for_selector(".chart[data-key='train/loss'][data-traces='12'] .u-legend")
    for group in ("", "&group=lr,lora.r,seed"):
        if group:
            page.goto(f"{server.base}/compare?ids={','.join(ids)}{group}")
            page.wait_for_selector(".chart[data-key='train/loss'][data-bands='12'] .u-legend")
        for chart in page.query_selector_all(".chart"):
            card = chart.bounding_box()["height"]
            legend = chart.query_selector(".u-legend").bounding_box()["height"]
            assert legend <= 0.3 * card, (legend, card)
            rows = [r for r in chart.query_selector_all(".u-legend .u-series") if r.is_visible()]
            heights = {round(r.bounding_box()["height"]) for r in rows}
            assert max(heights) <= 24, heights  # one line each: swatch, label and value together
            titles = {r.query_selector(".u-label").get_attribute("title") for r in rows[1:]}
            if not group:  # each label cut short where it must be, whole on hover
                assert titles == {
                    f"{'very-long-descriptive-run-name-' * 3}{i} ({id_})" for i, id_ in enumerate(ids)
                }
            assert all(titles), titles
        if not group:  # ten runs, ten colours told apart (past ten, they come round again, dashed)
            colours = _colours(page.query_selector(".chart[data-key='train/loss']"))
            assert _told_apart(
                [colours[f"{'very-long-descriptive-run-name-' * 3}{i} ({ids[i]})"] for i in range(10)]
            )
        page.screenshot(path=str(ARTIFACTS / f"look-6-legends{'-grouped' if group else ''}.png"))


def _colours(chart) -> dict[str, str]:
    """Each legend entry's label and its swatch's colour."""
    return {
        r.query_selector(".u-label").inner_text(): r.eval_on_selector(
            ".u-marker", "m => getComputedStyle(m).borderLeftColor"
        )
        for r in chart.query_selector_all(".u-legend .u-series")[1:]
    }


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(v) for v in re.findall(r"\d+", css)[:3])


def _lab(rgb: tuple[int, ...]) -> tuple[float, float, float]:
    """CIE L*a*b* of an sRGB colour (D65)."""

    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = map(linear, rgb)
    x, y, z = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def _told_apart(colours: list[str]) -> bool:
    """Every two colours differ by a CIE76 distance of 20 or more (about ten times what an eye just
    notices): the old golden-angle hues put two greens 16 apart among nine runs."""
    labs = [_lab(_rgb(c)) for c in colours]
    return all(math.dist(p, q) >= 20 for i, p in enumerate(labs) for q in labs[i + 1 :])


def test_7_a_run_keeps_its_colour_across_charts(store, server, page):
    ids = store[1]
    trl = [ids[f"trl{i}"] for i in range(3)]
    page.goto(f"{server.base}/compare?ids={','.join(trl)}")
    page.wait_for_selector(".chart[data-key='only/1'][data-traces='1'] .u-legend")
    page.wait_for_selector(".chart[data-key='train/loss'][data-traces='3'] .u-legend")
    charts = {c.get_attribute("data-key"): _colours(c) for c in page.query_selector_all(".chart")}
    loss = charts["train/loss"]
    for key, colours in charts.items():
        for label, colour in colours.items():
            assert colour == loss[label], (key, label)
    assert _told_apart(list(loss.values()))


def test_7_a_run_keeps_its_colour_in_the_report(store, server, page, tmp_path):
    ids = store[1]
    out = tmp_path / "report.html"
    run_script(
        "import sys; from tunetrack.cli import cli; cli(sys.argv[1:])",
        "report",
        ids["trl0"],
        ids["trl1"],
        "--dir",
        str(store[0]),
        "-o",
        str(out),
    )
    page.goto(out.as_uri())
    page.wait_for_selector(".chart[data-key='only/1'] .u-legend")
    charts = {c.get_attribute("data-key"): _colours(c) for c in page.query_selector_all("#charts .chart")}
    for key, colours in charts.items():
        for label, colour in colours.items():
            assert colour == charts["train/loss"][label], (key, label)


# -- 8: parallel coordinates without collisions ------------------------------------------------------
def _boxes(page) -> list[dict[str, float]]:
    return page.eval_on_selector_all(
        ".parcoords text",
        """ts => ts.filter(t => t.textContent).map(t => {
            const b = t.getBoundingClientRect(), s = t.ownerSVGElement.getBoundingClientRect();
            return {text: t.textContent, left: b.left - s.left, right: b.right - s.left, top: b.top - s.top,
                    bottom: b.bottom - s.top, width: s.width, height: s.height, cls: t.getAttribute('class')};
        })""",
    )


@pytest.mark.parametrize("query", ["?hp=eval/loss:best", "?project=sweep&hp=train/loss:best"])
@pytest.mark.parametrize("width", [1024, 1440])
def test_8_parallel_coordinates_labels_do_not_collide(store, server, page, query, width):
    _sized(page, width).goto(f"{server.base}/{query}")
    page.wait_for_selector("#parcoords svg .line", state="attached")
    boxes = _boxes(page)
    for b in boxes:  # inside the picture
        assert b["left"] >= -0.5 and b["right"] <= b["width"] + 0.5 and b["top"] >= -0.5, b
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = a["right"] <= b["left"] + 0.5 or b["right"] <= a["left"] + 0.5
            apart = apart or a["bottom"] <= b["top"] + 0.5 or b["bottom"] <= a["top"] + 0.5
            assert apart, (a, b)
    # "none" only on an axis some run has no value on
    data = page.evaluate("async q => (await fetch('/api/params' + q)).json()", _params_query(query))
    drawn = [a.get_attribute("data-key") for a in page.query_selector_all(".parcoords .axis")]
    assert drawn and drawn[-1] == data["axes"][-1]["key"]  # the metric last
    for i, axis in enumerate(data["axes"]):
        if axis["key"] not in drawn:
            continue
        nones = page.locator(f".parcoords .axis[data-key='{axis['key']}'] .tick.none").count()
        assert nones == (1 if any(r["values"][i] is None for r in data["runs"]) else 0), axis["key"]
    assert all(int(n) > 0 for n in page.locator("#importance tbody td:nth-child(3)").all_inner_texts())
    assert page.locator("#parcoords .scale-legend").count() == 1  # what the colours of the lines mean
    page.screenshot(
        path=str(ARTIFACTS / f"look-8-parcoords-{width}{'-sweep' if 'project' in query else ''}.png")
    )


def _params_query(query: str) -> str:
    q = parse_qs(query.lstrip("?"))
    return "?" + "&".join([f"metric={q['hp'][0]}"] + [f"project={p}" for p in q.get("project", [])])


# -- 9: page state in the URL, and a link that lands -------------------------------------------------
def test_9_the_run_page_keeps_its_choices_in_the_url(store, server, page):
    page.goto(f"{server.base}/run/{store[1]['trl0']}")
    page.wait_for_selector("#charts .chart[data-points]")
    page.select_option("#xaxis", "relative")
    page.check("#logy")
    page.fill("#smooth", "0.6")
    page.dispatch_event("#smooth", "change")
    wait_until(
        lambda: parse_qs(urlsplit(page.url).query) == {"x": ["relative"], "log": ["1"], "smooth": ["0.6"]}
    )
    page.reload()
    page.wait_for_selector("#charts .chart[data-points]")
    assert page.input_value("#xaxis") == "relative" and page.is_checked("#logy")
    assert page.input_value("#smooth") == "0.6"


def test_9_the_compare_page_keeps_its_row_and_lands_on_the_samples(store, server, page):
    a, b = store[1]["grpo"], store[1]["grpo-b"]
    _sized(page, 1024, 500).goto(f"{server.base}/compare?ids={a},{b}&key=completions&step=1&row=2#samples")
    page.wait_for_selector(".pairs .side")
    assert page.inner_text("#sample-prompt-text") == "Name a prime above 10."
    wait_until(lambda: page.evaluate("window.scrollY") > 0)
    # the samples are what the page shows: their heading at the top, or scrolled as far as the page goes
    top, farthest = page.evaluate(
        "() => [document.getElementById('samples').getBoundingClientRect().top,"
        " scrollY >= document.documentElement.scrollHeight - innerHeight - 1]"
    )
    assert 0 <= top < 30 or (farthest and 0 <= top < 250), top
    assert parse_qs(urlsplit(page.url).query)["row"] == ["2"]
    page.reload()
    page.wait_for_selector(".pairs .side")
    assert page.inner_text("#sample-prompt-text") == "Name a prime above 10."


# -- 10: error pages that say what to do -------------------------------------------------------------
def test_10_error_pages_say_what_to_do(store, server, page):
    page.goto(f"{server.base}/compare")
    page.wait_for_selector("#error:has-text('pick runs to compare')")
    assert "[object Object]" not in page.inner_text("body")
    assert "/compare?ids=" in page.inner_text("#error")

    response = page.goto(f"{server.base}/run/doesnotexist")
    assert response.status == 404
    page.wait_for_selector("#error:has-text('doesnotexist')")
    shown = [e for e in page.query_selector_all("h2, #cfgsearch, #report, #facts dd, .bar") if e.is_visible()]
    assert shown == []  # the message, not an empty skeleton
    assert page.locator(".error:visible").count() == 1

    page.goto(f"{server.base}/compare?ids=nosuch1,nosuch2")
    page.wait_for_selector("#error:has-text('nosuch1')")
    assert page.locator(".error:visible").count() == 1  # once
    assert page.locator("#samples-section:visible, #sample-key:visible").count() == 0


# -- the low ones, where an API or browser check is cheap --------------------------------------------
def test_low_api_answers(store):
    """19: the side-by-side picker's runs are those with the table; 22: one wording for a filter that
    is no regular expression; 13: an unknown group key on the compare page is a 422; 3: the runs table
    format carries the failure."""
    from fastapi.testclient import TestClient

    from tunetrack.ui.app import create_app

    root, ids = store
    with TestClient(create_app(root), base_url="http://test") as c:
        offered = c.get("/api/samples/runs", params={"key": "completions", "run": ids["grpo"]}).json()["runs"]
        assert [r["id"] for r in offered] == [ids["grpo-b"]]  # not failed-oom nor chatty, of the same project
        assert c.get("/api/samples/runs", params={"key": "nosuch", "run": ids["grpo"]}).json()["runs"] == []
        logs = c.get(f"/api/runs/{ids['chatty']}/logs", params={"grep": "(["}).json()["detail"]
        samples = c.get(f"/api/runs/{ids['grpo']}/samples", params={"grep": "(["}).json()["detail"]
        assert logs.split(" (")[0] == samples.split(" (")[0] == "grep: '([' is not a regular expression"
        trl = [ids[f"trl{i}"] for i in range(3)]
        grouped = c.get("/api/compare/groups", params={"id": trl, "by": "lora.rank", "key": "train/loss"})
        assert grouped.status_code == 422 and "did you mean config.lora.r" in grouped.json()["detail"]
        table = c.get("/api/runs", params={"format": "table", "project": "rl"}).json()
        failure = table["fields"].index("failure")
        assert {row[0]: row[failure] for row in table["rows"]}[
            ids["failed"]
        ] == "CUDA out of memory on rank 0"


def test_low_runs_page(store, server, page):
    """17: dates and durations as the CLI prints them; 21: a project filter shown and cleared, and an
    empty store or filter said; 23: plurals and the compare button's count; 24: headers sorted by
    keyboard, ticked runs kept in the URL; 25: tidy brush chips; 16: the against box names the metric in use."""
    ids = store[1]
    page.goto(f"{server.base}/?project=sweep")
    row = page.wait_for_selector(f"#runs tbody tr[data-run='{ids['trl0']}']")
    start, duration = (row.query_selector(f"td:nth-child({n})").inner_text() for n in (7, 8))
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", start) and re.fullmatch(r"\d+m\d\ds", duration)
    assert page.inner_text("#status") == "3 of 3 runs"
    page.focus("#runs th[data-sort='name']")
    page.keyboard.press("Enter")
    wait_until(lambda: "sort=name" in page.url)
    names = [
        tr.query_selector("td:nth-child(3)").inner_text()
        for tr in page.query_selector_all("#runs tbody tr[data-run]")
    ]
    assert names == sorted(names)
    page.check(f"#runs tbody tr[data-run='{ids['trl0']}'] input")
    page.check(f"#runs tbody tr[data-run='{ids['trl1']}'] input")
    assert page.inner_text("#compare") == "compare 2 runs"
    page.reload()
    page.wait_for_selector(f"#runs tbody tr[data-run='{ids['trl0']}'] input:checked")
    assert page.is_enabled("#compare") and page.inner_text("#compare") == "compare 2 runs"
    page.click("#hp-toggle")
    wait_until(lambda: page.get_attribute("#hp-metric", "placeholder").startswith("train/loss:best"))
    page.goto(f"{server.base}/?project=sweep&brush=" + '["config.lr", 0.0000514, 0.0001]')
    chip = page.wait_for_selector("#brushes .chip[data-field='config.lr']")
    assert chip.inner_text().startswith("5.1e-5 ≤ config.lr ≤ 0.0001")
    page.click("#brushes .chip[data-field='project'] .drop")  # the project filter, cleared
    wait_until(
        lambda: "project=" not in page.url and page.inner_text("#status").endswith(f"of {len(ids)} runs")
    )


def test_low_run_page(tmp_path, server_factory, page):
    """15: system metrics in units, a constant one as a fact; 18: no events heading without events;
    26: a log scale spans the data, a learning rate is not smoothed; 27: a NaN's marker on a time axis;
    28: no "live" once the run has ended; 20: the hover legend says where a nearest point is."""
    root = tmp_path / "runs"

    class Host:
        name = "host"

        def __init__(self):
            self.calls = 0

        def sample(self):
            self.calls += 1
            return {"mem.total_bytes": 64e9, "mem.used_bytes": 2e9 + self.calls * 1e8}

        def close(self): ...

    host = Host()
    t = Tracker(dir=root, name="units", system=True, system_interval=0.05, system_sources=[host]).start()
    for step in range(1, 301):
        t.log(
            {
                "eval/loss": 0.6 + 0.6 / step,
                "train/lr": 1e-4 * (1 - step / 300),
                "loss": math.nan if step == 150 else 1.0 / step,
            },
            step=step,
        )
    wait_until(lambda: host.calls >= 3)
    t.finish()
    sparse = Tracker(dir=root, name="sparse", system=False).start()
    for step in (100, 200):
        sparse.log({"eval/loss": 0.9}, step=step)
    sparse.finish()
    server = server_factory(root)
    page.goto(f"{server.base}/run/{t.id}?smooth=0.9&log=1")
    page.wait_for_selector("#system .chart[data-key='mem.used_bytes'] .uplot")
    wait_until(lambda: "mem.total_bytes" in page.inner_text("#system-facts"))
    assert "64 GB" in page.inner_text("#system-facts")
    assert page.locator("#system .chart[data-key='mem.total_bytes']").is_hidden()
    ticks = page.evaluate(
        "() => document.querySelector(\"#system .chart[data-key='mem.used_bytes']\").chart.axes[1]._values"
    )
    assert ticks and all(v == "" or v.endswith(" GB") for v in ticks), ticks
    assert page.inner_text("#status") == ""  # ended: nothing is live
    page.wait_for_selector("#charts .chart[data-key='eval/loss'][data-points] .uplot")
    low, high = page.evaluate(
        "() => { const u = document.querySelector(\"#charts .chart[data-key='eval/loss']\").chart; return [u.scales.y.min, u.scales.y.max]; }"
    )
    assert 0.5 < low < 0.6 and 1.2 < high < 1.5  # not 0.1 to 10
    lr = page.evaluate(
        "() => document.querySelector(\"#charts .chart[data-key='train/lr']\").chart.data[1].slice(0, 3)"
    )
    assert lr == pytest.approx([1e-4 * (1 - s / 300) for s in (1, 2, 3)])  # as logged, not smoothed
    page.select_option("#xaxis", "relative")
    wait_until(lambda: page.get_attribute("#charts .chart[data-key='loss']", "data-markers") == "1")
    page.goto(f"{server.base}/compare?ids={t.id},{sparse.id}")
    page.wait_for_selector(".chart[data-key='eval/loss'][data-traces='2'][data-drawn]")
    values = page.evaluate(
        """() => { const u = document.querySelector(".chart[data-key='eval/loss']").chart;
                   u.setCursor({ left: u.valToPos(150, "x"), top: 10 });
                   return [...u.root.querySelectorAll(".u-legend .u-series .u-value")].map(v => v.textContent); }"""
    )
    assert (
        values[0] == "150"
        and "(at" not in values[1]
        and re.fullmatch(r"0\.9 \(at step (100|200)\)", values[2])
    ), values
