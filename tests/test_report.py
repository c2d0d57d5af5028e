"""``tunetrack report``: one self-contained HTML file of real runs, read back from the file itself.

What the page shows is the JSON block the file embeds (``report_data``); these tests read that block
back as the page's script does and check the data, the escaping and the size. That the page draws it,
offline, is tests/ui/test_report_browser.py's part (a real browser).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from support.helpers import NASTY, SRC, XSS, embedded, run_script, seed_two_runs, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.reader import open_run
from tunetrack.ui.assets import UPLOT_JS, UPLOT_LICENSE
from tunetrack.ui.report import WIDTH


def report(*args: object):
    return CliRunner().invoke(cli, ["report", *map(str, args)], catch_exceptions=False)


def chart(data: dict, key: str) -> dict:
    (found,) = [c for c in data["charts"] if c["key"] == key]
    return found


def test_one_run(root, tmp_path):
    a, _ = seed_two_runs(root)
    out = tmp_path / "one.html"
    result = report(a, "--dir", root, "-o", out)
    assert result.exit_code == 0, result.output
    assert result.output == f"wrote {out} (1 run, {out.stat().st_size / 1e3:.0f} kB)\n"  # piped: no bar
    html = out.read_text()
    data = embedded(html)
    (run,) = data["runs"]
    assert (run["id"], run["name"], run["project"], run["state"]) == (a, "alpha", "p", "finished")
    assert run["provenance"]["python"] and run["provenance"]["processes"] == 1
    assert run["summary"]["loss"] == {
        "last": 0.05,
        "min": 0.05,
        "max": 2.0,
        "best": 0.05,
        "best_step": 40,
        "step": 40,
        "count": 40,
    }
    assert run["config"] == {"lr": "0.1", "layers": "2"}
    assert [(e["kind"], e["step"], e["path"]) for e in run["events"] if e["kind"] == "checkpoint"] == [
        ("checkpoint", 20, "ckpt-20")
    ]
    assert data["diff"] == []  # one run: nothing to compare
    (loss,) = chart(data, "loss")["lines"]
    assert loss["x"] == list(range(1, 41))  # few points: every one of them
    assert loss["y"][8] == 2.0 / 9 and loss["y"][9] is None and loss["y"][10] is None  # NaN, inf: gaps
    (evals,) = chart(data, "eval/loss")["lines"]
    assert evals["x"] == [10, 20, 30, 40]  # logged as None elsewhere: no point there, the line joins them
    # self-contained: uPlot, its licence, and a policy that lets nothing load
    assert UPLOT_JS.read_text() in html and UPLOT_LICENSE.read_text().splitlines()[0] in html
    assert "default-src 'none'" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)


def test_two_runs_overlaid_and_every_string_escaped(root, tmp_path):
    a, x = seed_two_runs(root)
    out = tmp_path / "two.html"
    assert report(a, x, "--dir", root, "-o", out).exit_code == 0
    html = out.read_text()
    data = embedded(html)
    assert [r["name"] for r in data["runs"]] == ["alpha", XSS]
    assert data["runs"][1]["tags"] == [NASTY] and data["runs"][1]["config"][NASTY] == NASTY
    assert [line["run"] for line in chart(data, "loss")["lines"]] == [a, x]
    assert [line["run"] for line in chart(data, "eval/loss")["lines"]] == [a]
    assert data["diff"] == [
        {"key": NASTY, "values": [None, NASTY]},
        {"key": "layers", "values": ["2", None]},
        {"key": "lr", "values": ["0.1", "0.2"]},
    ]
    # No user string reaches the HTML as markup: the only script ends are the file's own.
    assert XSS not in html and "\u2028" not in html and "\u2029" not in html
    # the data, uPlot, and report.js with common.js inlined
    assert html.count("</script>") == html.count("<script") == 3
    assert html.count("<!--") == 0


def test_a_million_points_stay_small_and_keep_their_spike(root, tmp_path):
    t = Tracker(dir=root, name="long", system=False).start()
    for step in range(1_000_000):
        t.log({"loss": 100.0 if step == 777_777 else math.sin(step / 1000)}, step=step)
    t.finish()
    out = tmp_path / "long.html"
    assert report(t.id, "--dir", root, "-o", out).exit_code == 0
    assert out.stat().st_size < 1_000_000
    data = embedded(out.read_text())
    (line,) = chart(data, "loss")["lines"]
    assert len(line["x"]) <= 4 * WIDTH
    assert line["x"][line["y"].index(100.0)] == 777_777  # M4 keeps the single-step spike
    assert data["runs"][0]["summary"]["loss"]["count"] == open_run(t.id, dir=root).summary()["loss"]["count"]


def test_system_metrics_chart_per_node_over_seconds_since_the_start(root, tmp_path):
    class Gpu:
        name = "gpu"
        calls = 0

        def sample(self):
            self.calls += 1
            return {"gpu.0.util": 50 + self.calls}

        def close(self): ...

    gpu = Gpu()
    t = Tracker(dir=root, name="sys", system=True, system_interval=0.05, system_sources=[gpu]).start()
    t.log({"loss": 1.0}, step=1)
    wait_until(lambda: gpu.calls >= 3)
    t.finish()
    out = tmp_path / "r.html"
    assert report(t.id, "--dir", root, "-o", out).exit_code == 0
    util = chart(embedded(out.read_text()), "gpu.0.util")
    assert (util["group"], util["x"]) == ("system", "relative")
    (node,) = open_run(t.id, dir=root).nodes
    (line,) = util["lines"]
    assert line["label"] == f"sys ({t.id}) {node}"
    assert len(line["x"]) >= 3 and 0 <= line["x"][0] < line["x"][-1] < 60
    assert line["y"] == sorted(set(line["y"])) and line["y"][0] >= 51 and line["y"][-1] <= 50 + gpu.calls


def test_default_name_and_a_run_named_twice(root, tmp_path, monkeypatch):
    a, _ = seed_two_runs(root)
    monkeypatch.chdir(tmp_path)
    result = report(a, "alpha", "--dir", root)
    assert result.exit_code == 0
    assert len(embedded((tmp_path / f"tunetrack-report-{a}.html").read_text())["runs"]) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["nosuchrun"], "Error: no run"),
        (
            ["alpha", "-o", "{tmp}/missing/r.html"],
            "Error: cannot write {tmp}/missing/r.html: No such file or directory",
        ),
        (["alpha", "-o", "{tmp}"], "Error: Invalid value for '-o' / '--output'"),
    ],
    ids=["unknown run", "missing folder", "a folder"],
)
def test_errors_are_one_line(root, tmp_path, args, message):
    seed_two_runs(root)
    result = CliRunner().invoke(cli, ["report", "--dir", str(root), *[a.format(tmp=tmp_path) for a in args]])
    assert result.exit_code in (1, 2)
    assert result.output.startswith(message.format(tmp=tmp_path)) and result.output.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # no file left behind


def test_a_progress_bar_on_a_terminal_only(root, tmp_path):
    """stderr a terminal: a bar that reaches 100% (one step per chart); stdout gets only the result."""
    a, x = seed_two_runs(root)
    out = tmp_path / "r.html"
    terminal, bar_side = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tunetrack", "report", a, x, "--dir", str(root), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=bar_side,
        env={**os.environ, "PYTHONPATH": SRC, "COLUMNS": "100"},
    )
    os.close(bar_side)
    stdout, _ = proc.communicate(timeout=60)
    shown = b""
    while chunk := _read(terminal):
        shown += chunk
    os.close(terminal)
    assert proc.returncode == 0
    assert stdout.decode().startswith(f"wrote {out} (2 runs, ")
    assert b"report" in shown and b"100%" in shown


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the other side closed (Linux answers EIO)
        return b""


def test_needs_no_dashboard_dependencies(root, tmp_path):
    """The ``ui`` extra (FastAPI, uvicorn) is for the server: a report is made without it."""
    a, _ = seed_two_runs(root)
    out = tmp_path / "r.html"
    run_script(
        """
        import sys
        sys.modules["fastapi"] = sys.modules["uvicorn"] = sys.modules["starlette"] = None  # not installed
        from tunetrack.cli import main
        sys.argv = ["tunetrack", "report", *sys.argv[1:]]
        try:
            main()
        except SystemExit as e:
            assert e.code in (0, None), e.code
        """,
        a,
        "--dir",
        str(root),
        "-o",
        str(out),
    )
    assert embedded(out.read_text())["runs"][0]["id"] == a


def _grpo(root, steps=3, rows=200):
    """A GRPO-like run: chat prompts, 5 kB completions, a reward (NaN once), TRL's own step column."""
    t = Tracker(dir=root, name="grpo", system=False).start()
    for step in range(1, steps + 1):
        t.log({"loss": 1.0 / step}, step=step)
        t.log_table(
            "completions",
            [
                {
                    "step": step,
                    "prompt": [{"role": "user", "content": f"question {i % 8}"}],
                    "completion": f"answer {i} at {step} " + "x" * 5000,
                    "reward": float("nan") if i == 1 else i / 10,
                }
                for i in range(rows)
            ],
            step=step,
        )
    t.log_table("eval", [{"text": XSS}], step=1)
    t.finish()
    return t.id


def test_a_table_of_samples_at_the_last_step_stays_small(root, tmp_path):
    from tunetrack.reader.as_text import SAMPLE_CHARS, SAMPLE_ROWS

    run_id = _grpo(root)
    out = tmp_path / "r.html"
    assert report(run_id, "--dir", root, "-o", out).exit_code == 0
    (table,) = embedded(out.read_text())["samples"]
    assert (table["run"], table["key"], table["step"], table["steps"], table["total"]) == (
        run_id,
        "completions",
        3,
        3,
        200,
    )
    # TRL's step column says the step again: left out
    assert table["columns"] == [["prompt", "chat"], ["completion", "text"], ["reward", "number"]]
    assert len(table["rows"]) == SAMPLE_ROWS and [r["index"] for r in table["rows"]] == list(
        range(SAMPLE_ROWS)
    )
    prompt, completion, reward = table["rows"][5]["cells"]
    assert prompt == "user: question 5" and reward == "0.5"
    cut = len("answer 5 at 3 ") + 5000 - SAMPLE_CHARS
    assert completion == ("answer 5 at 3 " + "x" * 5000)[:SAMPLE_CHARS] + f"… [{cut:,} more characters]"
    assert table["rows"][1]["cells"][2] == "nan"
    # 3 MB of completions: the report holds about 16 kB of them
    assert out.stat().st_size < embedded_size_without_samples(out) + 25_000


def embedded_size_without_samples(out) -> int:
    html = out.read_text()
    data = embedded(html)
    return len(html.encode()) - len(json.dumps(data["samples"], ensure_ascii=False).encode())


def test_the_key_and_step_of_the_samples_are_chosen(root, tmp_path):
    run_id = _grpo(root, rows=4)
    a, _ = seed_two_runs(root)  # no samples: a note says so
    out = tmp_path / "r.html"
    args = ["--samples-key", "completions", "--samples-step", 2]
    assert report(run_id, a, "--dir", root, "-o", out, *args).exit_code == 0
    chosen, missing = embedded(out.read_text())["samples"]
    assert (chosen["key"], chosen["step"], chosen["total"]) == ("completions", 2, 4)
    assert missing == {"run": a, "label": f"alpha ({a})", "note": "no samples under 'completions' at step 2"}
    assert report(run_id, "--dir", root, "-o", out, "--samples-key", "eval").exit_code == 0
    (other,) = embedded(out.read_text())["samples"]
    assert (other["step"], other["rows"]) == (1, [{"index": 0, "cells": [XSS]}])
    result = CliRunner().invoke(
        cli, ["report", run_id, "--dir", str(root), "-o", str(out), "--samples-step", "7"]
    )
    assert result.exit_code == 1 and result.output == "Error: no run has samples at step 7\n"
    assert not out.exists()  # no file left behind
    assert embedded(report_html(root, a))["samples"] == []  # none asked for, none logged: no section


def report_html(root, run_id) -> str:
    from tunetrack.ui.report import render

    return render([open_run(run_id, dir=root)])


def test_a_failed_run_carries_the_last_lines_of_its_console(root, tmp_path):
    failed = run_script(
        f"""
        import os
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, system=False).start()
        print("RUN", t.id, flush=True)
        for i in range(30):
            print(f"step {{i}}", flush=True)
        os.write(2, b"CUDA out of memory. Tried to allocate 2.00 GiB\\n")
        raise RuntimeError("boom")
        """,
        env={"TUNETRACK_CONSOLE": "1"},
        check=False,
    )
    run_id = failed.stdout.split()[1]
    ok = Tracker(dir=root, system=False, name="fine").start()
    ok.log({"loss": 1.0}, step=1)
    ok.finish()
    out = tmp_path / "r.html"
    assert report(run_id, ok.id, "--dir", root, "-o", out).exit_code == 0
    runs = {r["id"]: r for r in embedded(out.read_text())["runs"]}
    lines = runs[run_id]["overview"]["last_lines"]
    # the lines printed before the traceback (which the report shows whole): how far the run got
    assert len(lines) == 20 and "CUDA out of memory" in lines[-1] and "step 29" in lines[-2]
    assert not any("Traceback" in line or "boom" in line for line in lines)
    assert runs[ok.id]["overview"]["last_lines"] == []  # a run that finished shows none
