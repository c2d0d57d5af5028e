"""The CLI over real runs written by the real Tracker: in-process (CliRunner) and as a subprocess."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from click.testing import CliRunner

from helpers import SRC
from tunetrack import Tracker
from tunetrack.cli import cli


@pytest.fixture
def store(root):
    a = Tracker(
        project="p1",
        name="alpha",
        dir=root,
        tags=["base"],
        system=False,
        config={"lr": 1e-3, "model": {"layers": 2, "hidden": 64}, "seed": 1},
    ).start()
    for step in range(1, 201):
        a.log({"loss": 5.0 - step * 0.01, "learning_rate": 1e-3}, step=step)
        if step % 50 == 0:
            a.log({"eval_loss": 4.0 - step * 0.001}, step=step)
    a.log({"odd": math.nan, "none": None}, step=200)
    a.event("checkpoint", step=100, path="/ckpt/100")
    a.finish()
    with (
        pytest.raises(RuntimeError),
        Tracker(
            project="p2",
            name="beta",
            dir=root,
            system=False,
            config={"lr": 3e-4, "model": {"layers": 2, "hidden": 128}},
        ) as b,
    ):
        b.log({"loss": 1.0}, step=1)
        raise RuntimeError("diverged")
    return root, a.id, b.id


def invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result


def test_ls_table_and_filters(store):
    root, a, b = store
    out = invoke("ls", "--dir", root)
    assert out.exit_code == 0
    assert "alpha" in out.output and "beta" in out.output
    assert "finished" in out.output and "failed" in out.output
    only = invoke("ls", "--dir", root, "--project", "p1").output
    assert "alpha" in only and "beta" not in only
    failed = invoke("ls", "--dir", root, "--state", "failed").output
    assert "beta" in failed and "alpha" not in failed


def test_ls_json(store):
    root, a, b = store
    runs = json.loads(invoke("ls", "--dir", root, "--json").output)
    assert [r["name"] for r in runs] == ["beta", "alpha"]
    assert runs[1] | {"id": a} == runs[1] and runs[1]["state"] == "finished" and runs[1]["last_step"] == 200
    assert {"id", "name", "project", "state", "tags", "created", "ended", "hosts"} <= set(runs[0])


def test_ls_empty_store(tmp_path):
    out = invoke("ls", "--dir", tmp_path / "nothing")
    assert out.exit_code == 0 and out.output.startswith("no runs in")


def test_show(store):
    root, a, b = store
    out = invoke("show", a[:6], "--dir", root).output  # a unique prefix names the run
    assert "alpha" in out and "finished" in out
    assert "model.hidden" in out and "64" in out
    assert "checkpoint" in out and "/ckpt/100" in out
    assert "loss" in out and "3" in out  # the summary's last loss is 3.0
    failed = invoke("show", "beta", "--dir", root).output
    assert "RuntimeError: diverged" in failed


def test_show_json(store):
    root, a, b = store
    data = json.loads(invoke("show", a, "--dir", root, "--json").output.replace("NaN", "null"))
    assert data["id"] == a and data["config"]["model"]["layers"] == 2
    assert data["summary"]["loss"]["last"] == pytest.approx(3.0)
    assert data["summary"]["eval_loss"]["count"] == 4
    assert [e["kind"] for e in data["events"]] == ["checkpoint"]


def test_unknown_and_ambiguous_runs_are_one_line_errors(store):
    root, a, b = store
    for args in (["show", "nope"], ["diff", a, "nope"], ["export", "nope"]):
        result = CliRunner().invoke(cli, [*args, "--dir", str(root)])
        assert result.exit_code != 0
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
        assert "no run 'nope'" in result.output
    result = CliRunner().invoke(cli, ["show", "", "--dir", str(root)])  # matches every run
    assert result.exit_code != 0 and "matches 2 runs" in result.output


def test_diff_shows_only_differing_keys(store):
    root, a, b = store
    out = invoke("diff", "alpha", "beta", "--dir", root).output
    assert "lr" in out and "model.hidden" in out and "seed" in out
    assert "model.layers" not in out
    same = invoke("diff", "alpha", "alpha", "--dir", root).output
    assert "same config" in same


def test_export_jsonl_round_trips(store):
    root, a, b = store
    rows = [json.loads(line) for line in invoke("export", a, "--dir", root).output.splitlines()]
    assert len(rows) == 200 + 4 + 1
    assert rows[0] == {"step": 1, "time": rows[0]["time"], "loss": 4.99, "learning_rate": 1e-3}
    last = rows[-1]
    assert math.isnan(last["odd"]) and last["none"] is None and last["step"] == 200


def test_export_csv_and_parquet(store, tmp_path):
    root, a, b = store
    lines = invoke("export", a, "--dir", root, "--format", "csv").output.splitlines()
    assert lines[0].split(",")[:4] == ["step", "time", "loss", "learning_rate"]
    out = tmp_path / "a.parquet"
    invoke("export", a, "--dir", root, "--format", "parquet", "-o", out)
    frame = pd.read_parquet(out)
    assert len(frame) == 205 and frame["loss"].iloc[0] == 4.99


def test_bad_arguments_exit_non_zero(store):
    root, _, _ = store
    result = CliRunner().invoke(cli, ["export", "alpha", "--dir", str(root), "--format", "xml"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_console_script_in_a_subprocess(store):
    root, a, _ = store
    exe = shutil.which("tunetrack")
    cmd = [exe] if exe else [sys.executable, "-m", "tunetrack"]
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "TUNETRACK_DIR": str(root)}
    proc = subprocess.run([*cmd, "ls", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert {r["id"] for r in json.loads(proc.stdout)} >= {a}
    bad = subprocess.run([*cmd, "show", "zzz"], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 1 and bad.stderr.strip() == f"Error: no run 'zzz' in {root}"


def test_export_system_metrics(root):
    class Source:
        name = "fake"

        def sample(self):
            return {"cpu.percent": 12.5, "gpu.0.util": 80}

        def close(self): ...

    t = Tracker(dir=root, name="sys", system_sources=[Source()], system_interval=0.1).start()
    t.log({"loss": 1.0})
    import time

    time.sleep(0.35)
    t.finish()
    rows = [
        json.loads(line) for line in invoke("export", "sys", "--dir", root, "--system").output.splitlines()
    ]
    assert len(rows) >= 3
    assert (
        rows[0]["node"].startswith("node0:")
        and rows[0]["cpu.percent"] == 12.5
        and rows[0]["gpu.0.util"] == 80
    )
    shown = invoke("show", "sys", "--dir", root).output
    assert "last value of" in shown and "node0:" in shown and "gpu.0.util" in shown
