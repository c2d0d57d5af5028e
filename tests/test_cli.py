"""The CLI over real runs written by the real Tracker: in-process (click's CliRunner) and through the
installed ``tunetrack`` console script in a subprocess."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from rich.text import Text

from support.helpers import SRC, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli, plot
from tunetrack.config import diff
from tunetrack.reader import open_run

STEPS = 300
ALPHA_CONFIG = {
    "lr": 1e-3,
    "seed": 1,
    "model": {"layers": 2, "hidden": 64},
    "optimizer": {"name": "adamw", "betas": [0.9, 0.999]},
}
BETA_CONFIG = {
    "lr": 3e-4,
    "warmup": 10,
    "model": {"layers": 2, "hidden": 128},
    "optimizer": {"name": "adamw", "betas": [0.9, 0.999]},
}


def loss(step: int) -> float:
    return 3.25 - step * 0.005  # 3.245 at step 1, 1.75 at step 300


def lr(step: int) -> float:
    return 1e-3 * min(1.0, step / 30) * (1 - step / (STEPS + 1))


def eval_loss(step: int) -> float:
    return 2.5 - step / 1000  # every 50 steps: 2.45 .. 2.2


@pytest.fixture
def store(root):
    """Two runs: ``alpha`` (project p1, finished) and ``beta`` (project p2, failed)."""
    a = Tracker(
        project="p1", name="alpha", dir=root, tags=["base", "lora"], system=False, config=ALPHA_CONFIG
    ).start()
    for step in range(1, STEPS + 1):
        a.log({"loss": loss(step), "learning_rate": lr(step)}, step=step)
        if step % 50 == 0:
            a.log({"eval_loss": eval_loss(step)}, step=step)
        if step == 100:
            a.event("checkpoint", step=step, path="/ckpt/100")
    a.log({"odd": math.nan, "big": math.inf, "none": None, "note": "done"}, step=STEPS)
    a.finish()
    with (
        pytest.raises(RuntimeError),
        Tracker(project="p2", name="beta", dir=root, tags=["base"], system=False, config=BETA_CONFIG) as b,
    ):
        b.log({"loss": 1.0}, step=1)
        raise RuntimeError("diverged")
    return root, a.id, b.id


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def ok(*args: object) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.stdout


def line_of(output: str, first: str) -> str:
    """The one table row whose first cell is ``first``."""
    (line,) = [line for line in output.splitlines() if line.split()[:1] == [first]]
    return line


def unique_prefix(ref: str, other: str) -> str:
    return next(ref[:n] for n in range(1, len(ref) + 1) if not other.startswith(ref[:n]))


def assert_one_line_error(result, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")
    return line


# -- ls --------------------------------------------------------------------------------------------
def test_ls_table_lists_both_runs_with_their_state(store):
    root, a, b = store
    out = ok("ls", "--dir", root)
    header = out.splitlines()[0].split()[::2]  # every other token is a column separator
    assert header == [
        "id", "name", "project", "state", "tags", "hosts", "created", "duration", "step", "loss", "eval_loss"
    ]  # fmt: skip
    alpha, beta = line_of(out, a), line_of(out, b)
    assert out.index(beta) < out.index(alpha)  # newest first
    host = socket.gethostname()
    for cell in ("alpha", "p1", "finished", "base, lora", host, "300", "1.75", "2.2"):
        assert f" {cell} " in alpha, cell
    for cell in ("beta", "p2", "failed", host, "1"):
        assert f" {cell} " in beta, cell
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(open_run(a, dir=root).created))
    assert created in alpha  # local time


def test_ls_filters(store):
    root, a, b = store
    only_p1 = ok("ls", "--dir", root, "--project", "p1")
    assert "alpha" in only_p1 and "beta" not in only_p1
    failed = ok("ls", "--dir", root, "--state", "failed")
    assert "beta" in failed and "alpha" not in failed
    lora = ok("ls", "--dir", root, "--tag", "lora")
    assert "alpha" in lora and "beta" not in lora
    both_tags = json.loads(ok("ls", "--dir", root, "--tag", "base", "--tag", "lora", "--json"))
    assert [r["id"] for r in both_tags] == [a]
    newest = json.loads(ok("ls", "--dir", root, "--limit", "1", "--json"))
    assert [r["id"] for r in newest] == [b]
    none = ok("ls", "--dir", root, "--project", "p1", "--state", "failed")
    assert none == f"no runs matching the filters in {root}\n"


def test_ls_json_has_the_fields(store):
    root, a, b = store
    runs = json.loads(ok("ls", "--dir", root, "--json"))
    assert [r["id"] for r in runs] == [b, a]
    beta, alpha = runs
    assert {"id", "name", "project", "state", "tags", "created", "ended", "last_step", "hosts"} <= set(alpha)
    assert (alpha["name"], alpha["project"], alpha["state"], alpha["tags"]) == (
        "alpha",
        "p1",
        "finished",
        ["base", "lora"],
    )
    assert (beta["name"], beta["project"], beta["state"]) == ("beta", "p2", "failed")
    assert alpha["last_step"] == STEPS and beta["last_step"] == 1
    assert alpha["hosts"] == [socket.gethostname()]
    assert alpha["created"] <= alpha["ended"] <= beta["created"] <= beta["ended"]
    assert alpha["last"]["loss"] == loss(STEPS) and alpha["last"]["note"] == "done"
    assert math.isnan(alpha["last"]["odd"])  # written as NaN, which json.loads reads back


@pytest.mark.parametrize("make", [False, True])
def test_ls_on_a_missing_or_empty_store(tmp_path, make):
    root = tmp_path / "nothing"
    if make:
        root.mkdir()
    assert ok("ls", "--dir", root) == f"no runs in {root}\n"
    assert json.loads(ok("ls", "--dir", root, "--json")) == []


def test_ls_shows_a_running_run(root):
    t = Tracker(name="live", dir=root, system=False).start()
    try:
        t.log({"loss": 0.5}, step=7)
        (run,) = json.loads(ok("ls", "--dir", root, "--json", "--state", "running"))
        assert run["id"] == t.id and run["ended"] is None
        assert " running " in line_of(ok("ls", "--dir", root), t.id)
    finally:
        t.finish()
    assert json.loads(ok("ls", "--dir", root, "--json"))[0]["state"] == "finished"


# -- show ------------------------------------------------------------------------------------------
def test_show_by_unique_prefix(store):
    root, a, b = store
    out = ok("show", unique_prefix(a, b), "--dir", root)
    assert f"alpha ({a})" in out and "finished" in out and "base, lora" in out
    # config: key, value
    for key, value in [("model.hidden", "64"), ("optimizer.betas", "[0.9, 0.999]"), ("seed", "1")]:
        assert line_of(out, key).split()[1:] == ["│", *value.split()], key
    # summary: key, last, min, max, step, count
    assert line_of(out, "loss").split()[::2] == ["loss", "1.75", "1.75", "3.245", "300", "300"]
    assert line_of(out, "eval_loss").split()[::2] == ["eval_loss", "2.2", "2.2", "2.45", "300", "6"]
    assert line_of(out, "odd").split()[::2] == ["odd", "nan", "—", "—", "300", "1"]
    (event,) = [line for line in out.splitlines() if "│ checkpoint" in line]  # not a branch named so
    assert event.split()[:3] == ["100", "│", "checkpoint"] and "path=/ckpt/100" in event
    assert "learning_rate (right axis)" in out and "step" in out  # the plot
    assert "error" not in out.split()


def test_show_failed_run_has_the_traceback(store):
    root, a, b = store
    out = ok("show", "beta", "--dir", root)  # by name
    assert f"beta ({b})" in out and "failed" in out
    assert "Traceback (most recent call last)" in out and "RuntimeError: diverged" in out


def test_show_json(store):
    root, a, b = store
    data = json.loads(ok("show", a, "--dir", root, "--json"))
    assert {"meta", "config", "summary", "events"} <= set(data)
    assert data["id"] == a and data["state"] == "finished" and data["error"] is None
    assert data["config"] == ALPHA_CONFIG
    assert data["summary"]["loss"] == {
        "last": 1.75,
        "min": 1.75,
        "max": 3.245,
        "best": 1.75,
        "best_step": 300,
        "step": 300,
        "count": 300,
    }
    assert data["summary"]["eval_loss"]["count"] == 6
    assert math.isnan(data["summary"]["odd"]["last"]) and data["summary"]["big"]["last"] == math.inf
    assert [(e["kind"], e["step"], e["path"]) for e in data["events"]] == [("checkpoint", 100, "/ckpt/100")]
    assert data["meta"]["processes"][0]["host"] == socket.gethostname()
    failed = json.loads(ok("show", b, "--dir", root, "--json"))
    assert failed["state"] == "failed" and "RuntimeError: diverged" in failed["error"]


def test_plot_picks_the_main_metrics(store):
    root, a, b = store
    chart = plot.plot(open_run(a, dir=root))
    assert "loss" in chart and "eval_loss" in chart and "learning_rate (right axis)" in chart
    lines = Text.from_ansi(chart).plain.splitlines()
    assert "step" in lines[-1] and max(len(line.rstrip()) for line in lines) <= 80
    assert plot.plot_keys(open_run(b, dir=root)) == (["loss"], [])


def test_plot_falls_back_to_the_first_two_numeric_keys(root):
    t = Tracker(name="rl", dir=root, system=False).start()
    for step in range(1, 50):
        t.log({"phase": "rollout", "reward": step * 0.1, "kl": 0.01 * step, "entropy": 1.0}, step=step)
    t.finish()
    run = open_run("rl", dir=root)
    assert plot.plot_keys(run) == (["reward"], ["kl"])
    chart = plot.plot(run)
    assert "reward" in chart and "kl (right axis)" in chart


def test_plot_of_a_run_without_numbers_is_empty(root):
    t = Tracker(name="text", dir=root, system=False).start()
    t.log({"phase": "warmup"}, step=1)
    t.finish()
    assert plot.plot(open_run("text", dir=root)) == ""
    assert "warmup" in ok("show", "text", "--dir", root)


# -- naming runs and errors ------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["show", "nope"], ["diff", "alpha", "nope"], ["export", "nope"]])
def test_unknown_run_is_a_one_line_error(store, command):
    root, _, _ = store
    result = CliRunner().invoke(cli, [*command, "--dir", str(root)])
    assert assert_one_line_error(result) == f"Error: no run 'nope' in {root}"


def test_ambiguous_prefix_and_name(root):
    ids: dict[str, str] = {}
    while True:  # at most 37 runs: ids are base 36, so two soon share a first character
        t = Tracker(name="twin" if len(ids) < 2 else None, dir=root, system=False).start()
        t.finish()
        if t.id[0] in ids:
            first, second = ids[t.id[0]], t.id
            break
        ids[t.id[0]] = t.id
    line = assert_one_line_error(CliRunner().invoke(cli, ["show", first[0], "--dir", str(root)]))
    assert f"'{first[0]}' matches" in line and first in line and second in line
    line = assert_one_line_error(CliRunner().invoke(cli, ["show", "twin", "--dir", str(root)]))
    assert "'twin' matches 2 runs" in line
    longer = unique_prefix(second, first)
    assert json.loads(ok("show", longer, "--dir", root, "--json"))["id"] == second


def test_a_name_comes_before_an_id_prefix(root):
    """A run named ``a`` is found by ``a`` although another run's id starts with ``a``."""
    other = Tracker(dir=root, system=False).start()
    other.finish()
    named = Tracker(dir=root, name=other.id[0], system=False).start()
    named.finish()
    assert json.loads(ok("show", other.id[0], "--dir", root, "--json"))["id"] == named.id


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export", "alpha", "--format", "xml"], "Invalid value for '--format'"),
        (["ls", "--state", "sleeping"], "Invalid value for '--state'"),
        (["ls", "--limit", "0"], "Invalid value for '--limit'"),
        (["show"], "Missing argument 'RUN'"),
        (["show", ""], "give a run id"),
        (["diff", "alpha"], "Missing argument 'RUN_B'"),
    ],
)
def test_bad_arguments_are_one_line_errors(store, args, message):
    root, _, _ = store
    line = assert_one_line_error(CliRunner().invoke(cli, [*args, "--dir", str(root)]), code=2)
    assert message in line and line.endswith(f"(see 'cli {args[0]} --help')")
    line = assert_one_line_error(CliRunner().invoke(cli, ["frobnicate"]), code=2)
    assert line == "Error: No such command 'frobnicate'. (see 'cli --help')"


# -- diff ------------------------------------------------------------------------------------------
def test_diff_shows_only_differing_keys(store):
    root, a, b = store
    out = ok("diff", "alpha", "beta", "--dir", root)
    lines = out.splitlines()
    assert lines[0].split() == ["key", "┃", "A:", "alpha", f"({a})", "┃", "B:", "beta", f"({b})"]
    assert [line.split()[0] for line in lines[2:-1]] == ["lr", "model.hidden", "seed", "warmup"]
    assert line_of(out, "lr").split() == ["lr", "│", "0.001", "│", "0.0003"]
    assert line_of(out, "model.hidden").split() == ["model.hidden", "│", "64", "│", "128"]
    assert line_of(out, "seed").split() == ["seed", "│", "1", "│", "(not", "set)"]
    assert line_of(out, "warmup").split() == ["warmup", "│", "(not", "set)", "│", "10"]
    assert lines[-1].strip() == "4 keys differ: 1 only in A, 1 only in B, 2 changed"
    assert ok("diff", "alpha", a, "--dir", root) == f"{a} and {a} have the same config\n"


def test_config_diff_compares_like_a_config():
    a = {"flag": True, "n": 1, "s": "1", "x": math.nan, "same": [1, 2], "f": 1}
    b = {"flag": 1, "n": 1, "s": 1, "x": math.nan, "same": [1, 2], "f": 1.0}
    assert [key for key, _ in diff([a, b])] == ["flag", "s"]


def test_diff_compares_configs_as_data(root):
    """bool vs int differ, NaN equals NaN, a missing key differs from None (the dashboard agrees:
    tests/ui/test_api.py)."""
    a = Tracker(dir=root, name="a", system=False, config={"flag": True, "x": math.nan, "opt": None, "n": 1})
    b = Tracker(dir=root, name="b", system=False, config={"flag": 1, "x": math.nan, "n": 1.0})
    for t in (a.start(), b.start()):
        t.finish()
    out = ok("diff", "a", "b", "--dir", root)
    assert [line.split()[0] for line in out.splitlines() if "│" in line] == ["flag", "opt"]
    assert line_of(out, "flag").split() == ["flag", "│", "True", "│", "1"]
    assert line_of(out, "opt").split() == ["opt", "│", "None", "│", "(not", "set)"]


# -- export ----------------------------------------------------------------------------------------
def logged_rows() -> list[dict]:
    """What ``alpha`` logged, in order (without the times)."""
    rows: list[dict] = []
    for step in range(1, STEPS + 1):
        rows.append({"step": step, "loss": loss(step), "learning_rate": lr(step)})
        if step % 50 == 0:
            rows.append({"step": step, "eval_loss": eval_loss(step)})
    rows.append({"step": STEPS, "odd": math.nan, "big": math.inf, "none": None, "note": "done"})
    return rows


def same_values(row: dict, expected: dict) -> bool:
    """Equal, NaN equal to NaN, ignoring the row's time."""
    nan = {k for k, v in row.items() if isinstance(v, float) and math.isnan(v)}
    expected_nan = {k for k, v in expected.items() if isinstance(v, float) and math.isnan(v)}
    rest = {k: v for k, v in row.items() if k not in nan and k != "time"}
    return nan == expected_nan and rest == {k: v for k, v in expected.items() if k not in expected_nan}


def test_export_jsonl_round_trips_values(store, tmp_path):
    root, a, b = store
    text = ok("export", a, "--dir", root)
    rows = [json.loads(line) for line in text.splitlines()]
    expected = logged_rows()
    assert len(rows) == len(expected)
    assert all(same_values(r, e) for r, e in zip(rows, expected))
    assert all(isinstance(r["time"], float) for r in rows)
    last = text.splitlines()[-1]
    assert '"odd": NaN' in last and '"big": Infinity' in last and '"none": null' in last
    out = tmp_path / "alpha.jsonl"
    result = invoke("export", a, "--dir", root, "--format", "jsonl", "-o", out)
    assert result.stdout == "" and result.stderr == f"wrote {len(rows)} rows to {out}\n"  # says what it did
    assert out.read_text() == text


def test_export_csv(store):
    root, a, b = store
    text = ok("export", a, "--dir", root, "--format", "csv")
    assert text.splitlines()[0] == "step,time,loss,learning_rate,eval_loss,odd,big,none,note"
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(logged_rows())
    assert rows[0]["step"] == "1" and float(rows[0]["loss"]) == loss(1) and rows[0]["eval_loss"] == ""
    assert (rows[-1]["odd"], rows[-1]["big"], rows[-1]["none"], rows[-1]["note"]) == (
        "nan",
        "inf",
        "",
        "done",
    )
    frame = pd.read_csv(io.StringIO(text))
    assert frame["loss"].dropna().tolist() == [loss(s) for s in range(1, STEPS + 1)]


def test_export_parquet(store, tmp_path, monkeypatch):
    root, a, b = store
    out = tmp_path / "a.parquet"
    result = invoke("export", a, "--dir", root, "--format", "parquet", "-o", out)
    assert result.exit_code == 0 and result.stderr == f"wrote {len(logged_rows())} rows to {out}\n"
    frame = pd.read_parquet(out)
    columns = ["step", "time", "loss", "learning_rate", "eval_loss", "odd", "big", "none", "note"]
    assert list(frame.columns) == columns and len(frame) == len(logged_rows())
    assert frame["loss"].dropna().tolist() == [loss(s) for s in range(1, STEPS + 1)]
    assert math.isnan(frame["odd"].iloc[-1]) and frame["big"].iloc[-1] == math.inf
    monkeypatch.chdir(tmp_path)  # without -o: ./<run id>.parquet
    assert invoke("export", "beta", "--dir", root, "--format", "parquet").exit_code == 0
    assert pd.read_parquet(tmp_path / f"{b}.parquet")["loss"].tolist() == [1.0]


def test_export_parquet_of_a_key_logged_as_number_and_text(root, tmp_path):
    t = Tracker(name="mixed", dir=root, system=False).start()
    t.log({"status": 1.5}, step=1)
    t.log({"status": "nan-guard"}, step=2)
    t.log({"other": 1}, step=3)
    t.finish()
    out = tmp_path / "m.parquet"
    ok("export", "mixed", "--dir", root, "--format", "parquet", "-o", out)
    assert pd.read_parquet(out)["status"].tolist()[:2] == ["1.5", "nan-guard"]


def test_export_parquet_without_pyarrow_says_how_to_install(store, monkeypatch):
    root, a, _ = store
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    result = CliRunner().invoke(cli, ["export", a, "--dir", str(root), "--format", "parquet"])
    line = assert_one_line_error(result)
    assert line == "Error: parquet export needs pandas and pyarrow: pip install 'tunetrack[parquet]'"


def test_export_system_metrics(root):
    class Source:
        name = "fake"
        samples = 0

        def sample(self):
            self.samples += 1
            return {"cpu.percent": 12.5, "gpu.0.util": 80}

        def close(self): ...

    source = Source()
    t = Tracker(dir=root, name="sys", system_sources=[source], system_interval=0.1).start()
    t.log({"loss": 1.0})
    wait_until(lambda: source.samples >= 3)  # finish() then waits for the last one's row
    t.finish()
    rows = [json.loads(line) for line in ok("export", "sys", "--dir", root, "--system").splitlines()]
    assert len(rows) >= 3
    assert (
        rows[0]["node"].startswith("node0:")
        and rows[0]["cpu.percent"] == 12.5
        and rows[0]["gpu.0.util"] == 80
    )
    header = ok("export", "sys", "--dir", root, "--system", "--format", "csv").splitlines()[0]
    assert header.startswith("node,step,time,") and "gpu.0.util" in header
    shown = ok("show", "sys", "--dir", root)
    assert "last value of" in shown and "node0:" in shown and "gpu.0.util" in shown


# -- managing runs ---------------------------------------------------------------------------------
def test_tag_rename_and_note_show_in_ls_and_show(store):
    root, a, b = store
    assert ok("tag", "alpha", "+best", "-lora", "--dir", root) == f"{a} (alpha): tags base, best\n"
    assert ok("rename", "alpha", "alpha-final", "--dir", root) == f"{a}: renamed 'alpha' to 'alpha-final'\n"
    assert ok("note", "alpha-final", "lr 1e-3 was the one", "--dir", root) == f"{a} (alpha-final): 1 note\n"
    ok("note", a, "second thoughts", "--dir", root)
    listed = {r["id"]: r for r in json.loads(ok("ls", "--dir", root, "--json"))}
    assert (listed[a]["name"], listed[a]["tags"]) == ("alpha-final", ["base", "best"])
    assert [n["text"] for n in listed[a]["notes"]] == ["lr 1e-3 was the one", "second thoughts"]
    assert (listed[b]["name"], listed[b]["tags"], listed[b]["notes"]) == ("beta", ["base"], [])
    assert " alpha-final " in line_of(ok("ls", "--dir", root), a)
    assert [r["id"] for r in json.loads(ok("ls", "--dir", root, "--tag", "best", "--json"))] == [a]
    shown = json.loads(ok("show", "alpha-final", "--dir", root, "--json"))
    assert (shown["id"], shown["name"], shown["tags"]) == (a, "alpha-final", ["base", "best"])
    assert [n["text"] for n in shown["notes"]] == ["lr 1e-3 was the one", "second thoughts"]
    assert [sorted(set(e) - {"time", "by"}) for e in shown["meta"]["edits"]] == [
        ["tags"], ["name"], ["note"], ["note"]
    ]  # fmt: skip
    table = ok("show", "alpha-final", "--dir", root)
    assert f"alpha-final ({a})" in table and "base, best" in table
    assert "notes" in table and "lr 1e-3 was the one" in table and "second thoughts" in table
    assert_one_line_error(CliRunner().invoke(cli, ["show", "alpha", "--dir", str(root)]))


def test_tag_changes_may_start_with_a_dash_anywhere(store):
    root, a, _ = store
    assert ok("tag", "-base", a, "+x", "--dir", root) == f"{a} (alpha): tags lora, x\n"
    assert ok("tag", "--dir", root, a, "--", "-x", "+y") == f"{a} (alpha): tags lora, y\n"
    assert "Add (+TAG) and remove (-TAG)" in ok("tag", "-h")


def test_rm_asks_and_deletes_only_what_it_was_told(store):
    root, a, b = store
    declined = CliRunner().invoke(cli, ["rm", "alpha", "beta", "--dir", str(root)], input="n\n")
    assert declined.exit_code == 1 and declined.stdout == ""
    assert "Delete 2 runs?" in declined.stderr and f"{a}  alpha  (finished)" in declined.stderr
    assert "Aborted!" in declined.stderr
    assert {r["id"] for r in json.loads(ok("ls", "--dir", root, "--json"))} == {a, b}
    agreed = CliRunner().invoke(cli, ["rm", "alpha", "--dir", str(root)], input="y\n")
    assert agreed.exit_code == 0 and agreed.stdout == f"deleted {a} (alpha)\n"
    assert ok("rm", b, "--yes", "--dir", root) == f"deleted {b} (beta)\n"
    assert ok("ls", "--dir", root) == f"no runs in {root}\n"
    assert sorted(p.name for p in root.iterdir()) == [".audit", ".index"]
    audit = [json.loads(line) for line in ok("audit", "--dir", root, "--json").splitlines()]
    assert [(e["action"], e["run"], e["name"]) for e in audit] == [
        ("delete", a, "alpha"),
        ("delete", b, "beta"),
    ]


def test_rm_of_a_running_run_needs_force(root):
    t = Tracker(name="live", dir=root, system=False).start()
    try:
        line = assert_one_line_error(CliRunner().invoke(cli, ["rm", "live", "--yes", "--dir", str(root)]))
        assert line == f"Error: {t.id} (live) is still running; --force (force=True) deletes it anyway"
        assert open_run(t.id, dir=root).state == "running"
        assert ok("rm", "live", "--yes", "--force", "--dir", root) == f"deleted {t.id} (live)\n"
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the writer finds its folder gone
            t.finish()
    assert not (root / t.id).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tag", "nope", "+x"], "Error: no run 'nope' in {root}"),
        (["tag", "alpha", "best"], "Error: tag changes are +TAG (add) or -TAG (remove), not 'best'"),
        (["tag", "alpha", "+best", "-best"], "Error: 'best' is both added and removed"),
        (["rename", "alpha", ""], "Error: a run's name cannot be empty"),
        (["rename", "alpha", "beta"], "Error: 'beta' already names run {b} (beta): pick another name"),
        (["rename", "nope", "x"], "Error: no run 'nope' in {root}"),
        (["note", "alpha", "  "], "Error: a note cannot be empty"),
        (["rm", "alpha", "nope", "--yes"], "Error: no run 'nope' in {root}"),
    ],
)
def test_bad_edits_are_one_line_errors_and_change_nothing(store, args, message):
    root, a, b = store
    before = sorted(p.name for p in root.rglob("*"))
    line = assert_one_line_error(CliRunner().invoke(cli, [*args, "--dir", str(root)]))
    assert line == message.format(root=root, b=b)
    assert sorted(p.name for p in root.rglob("*")) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tag", "alpha"], "Missing argument 'CHANGES...'"),
        (["rename", "alpha"], "Missing argument 'NEW_NAME'"),
        (["note", ""], "give a run id"),
        (["rm"], "Missing argument 'RUNS...'"),
    ],
)
def test_bad_management_arguments_are_usage_errors(store, args, message):
    root, _, _ = store
    line = assert_one_line_error(CliRunner().invoke(cli, [*args, "--dir", str(root)]), code=2)
    assert message in line and line.endswith(f"(see 'cli {args[0]} --help')")


# -- the installed console script ------------------------------------------------------------------
def console_script() -> str:
    exe = Path(sys.executable).parent / "tunetrack"
    if not exe.exists():
        pytest.fail(f"no console script at {exe}: install the package (pip install -e .)")
    return str(exe)


def test_console_script_in_a_subprocess(store):
    root, a, b = store
    env = {"PATH": "/usr/bin:/bin", "TUNETRACK_DIR": str(root), "PYTHONPATH": SRC}  # no --dir: the env

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([console_script(), *args], capture_output=True, text=True, env=env, timeout=120)

    listed = run("ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [(r["id"], r["state"]) for r in json.loads(listed.stdout)] == [(b, "failed"), (a, "finished")]
    table = run("ls")
    assert "alpha" in table.stdout and "failed" in table.stdout and table.stderr == ""
    bad = run("show", "zzz")
    assert (bad.returncode, bad.stdout, bad.stderr) == (1, "", f"Error: no run 'zzz' in {root}\n")
    usage = run("export", a, "--format", "xml")
    assert usage.returncode == 2 and usage.stdout == ""
    assert (
        usage.stderr.startswith("Error: Invalid value for '--format'") and len(usage.stderr.splitlines()) == 1
    )
    shown = run("show", unique_prefix(a, b))
    assert shown.returncode == 0 and "model.hidden" in shown.stdout and "1.75" in shown.stdout


def test_export_into_a_closed_pipe_is_quiet(root):
    t = Tracker(name="long", dir=root, system=False).start()
    for step in range(20_000):  # more than a pipe's buffer
        t.log({"loss": 1.0, "learning_rate": 1e-4}, step=step)
    t.finish()
    proc = subprocess.Popen(
        [console_script(), "export", "long", "--dir", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert json.loads(proc.stdout.readline())["step"] == 0
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert err == "" and proc.returncode in (0, 1)


def test_export_shows_a_progress_bar_on_a_terminal_and_nothing_when_piped(root):
    t = Tracker(name="big", dir=root, system=False).start()
    for step in range(5000):
        t.log({"loss": 1.0 / (step + 1)}, step=step)
    t.finish()
    env = {**os.environ, "PYTHONPATH": SRC, "TERM": "xterm-256color", "COLUMNS": "100"}
    command = [console_script(), "export", "big", "--dir", str(root)]
    piped = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert piped.returncode == 0 and piped.stderr == ""
    assert [json.loads(line)["step"] for line in piped.stdout.splitlines()] == list(range(5000))

    import pty

    parent, child = pty.openpty()  # stderr on a terminal, stdout still a pipe (`... > rows.jsonl`)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=child, text=True, env=env)
    os.close(child)
    chunks: list[bytes] = []

    def read_terminal() -> None:  # read as it comes: a terminal's buffer is small
        while chunk := _read(parent):
            chunks.append(chunk)

    reader = threading.Thread(target=read_terminal)
    reader.start()
    out = proc.communicate(timeout=120)[0]
    reader.join(timeout=30)
    os.close(parent)
    shown = b"".join(chunks)
    assert proc.returncode == 0 and out == piped.stdout  # the bar never touches the data
    assert f"exporting {t.id}".encode() in shown


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the terminal closed with the process
        return b""


def test_help_imports_no_heavy_module():
    env = {**os.environ, "PYTHONPATH": SRC}
    code = (
        "import sys; from tunetrack.cli import cli; "
        "heavy = {'rich', 'numpy', 'plotext', 'pandas'} & set(sys.modules); assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
    out = subprocess.run(
        [sys.executable, "-m", "tunetrack", "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0 and all(c in out.stdout for c in ("ls", "show", "diff", "export"))


def test_the_cli_page_synopsis_lists_every_command():
    """docs/cli.md opens with one line per command: a command added to the CLI is added there too."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    synopsis = page[page.index("```text") : page.index("```", page.index("```text") + 3)]
    listed = set(re.findall(r"^tunetrack (\S+)", synopsis, flags=re.M))
    assert listed == set(cli.commands)


def test_the_cli_package_lists_every_command_under_its_module():
    """``cli/main.py``'s docstring names each command under the module that defines it: a command added
    or moved is listed where it is (the list missed six commands once)."""
    import importlib

    main_module = importlib.import_module("tunetrack.cli.main")  # ``tunetrack.cli.main`` is also a function
    listed = {
        name: module
        for module, names in re.findall(r"^- ``(\w+)``: (.+)$", main_module.__doc__ or "", flags=re.M)
        for name in re.findall(r"``([\w-]+)``", names)
    }
    assert listed == {name: c.callback.__module__.rpartition(".")[2] for name, c in cli.commands.items()}
