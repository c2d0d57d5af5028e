"""Helpers shared by the tests: run code in a fresh interpreter, poll instead of sleeping."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SRC = str(Path(__file__).resolve().parents[2] / "src")
EXAMPLES_DIR = str(Path(__file__).resolve().parents[2] / "examples")


def run_script(
    code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (a new process, like a real training script)."""
    full_env = {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(env or {}),
    }
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"script failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def spawn_script(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full_env = {
        **os.environ,
        "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(env or {}),
    }
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def checkpoints_cli(run: str, store: str | Path, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``tunetrack checkpoints RUN --dir STORE --json`` in a process of its own, as a user runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "tunetrack", "checkpoints", run, "--dir", str(store), "--json"],
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def assert_hashed_as_on_disk(checkpoint: dict[str, Any]) -> None:
    """Every file of a checkpoint's folder is listed with its size and SHA-256, as it is on disk."""
    folder = Path(checkpoint["path"])
    on_disk = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    assert sorted(f["name"] for f in checkpoint["files"]) == sorted(on_disk)
    for listed in checkpoint["files"]:
        data = on_disk[listed["name"]].read_bytes()
        assert (listed["size"], listed["sha256"]) == (len(data), hashlib.sha256(data).hexdigest()), listed
    assert checkpoint["bytes"] == sum(f["size"] for f in checkpoint["files"])


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.05) -> object:
    """Poll instead of sleeping a fixed time (the machine is noisy)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``tunetrack ui`` in a subprocess on a free port; stopped (SIGINT, like Ctrl-C) at teardown."""

    def __init__(
        self,
        root: Path,
        host: str = "127.0.0.1",
        token: str | None = None,
        read_only: bool = False,
        team: Path | None = None,
        port: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = port or free_port()
        self.base = f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{self.port}"
        cmd = [
            sys.executable,
            "-m",
            "tunetrack",
            "ui",
            "--dir",
            str(root),
            "--host",
            host,
            "--port",
            str(self.port),
        ]
        if token:
            cmd += ["--token", token]
        if read_only:
            cmd.append("--read-only")
        if team is not None:
            cmd += ["--team", str(team)]
        self.proc = subprocess.Popen(
            cmd,
            env={**os.environ, **(env or {}), "PYTHONPATH": SRC},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.banner = self.proc.stdout.readline().strip()
        import httpx

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server died: {self.banner}\n{self.proc.stdout.read()}")
            try:
                httpx.get(self.base + "/static/app.css", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> int:
        self.proc.send_signal(2)
        return self.proc.wait(timeout=15)


def drag_across(page: Any, chart: Any) -> None:
    """Press and drag across the middle of a uPlot chart's plot area (its overlay, 40% to 60% of its
    width): a selection, which uPlot zooms to when the caller releases the mouse (``page.mouse.up()``)."""
    box = chart.query_selector(".u-over").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.4, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=5)


# -- reports (tunetrack report) ------------------------------------------------------------------
XSS = "<img src=x onerror=alert(1)>"
#: every character the JSON block must escape: one that ends it, one that starts a comment, the line separators
NASTY = "</script><!--&\u2028\u2029"


def seed_two_runs(root: Path) -> tuple[str, str]:
    """``alpha``: 40 steps of loss with a NaN, an infinity and an eval metric logged as None between
    evaluations, and a checkpoint; the second run: an XSS name and nasty strings everywhere."""
    from tunetrack import Tracker

    a = Tracker(dir=root, name="alpha", project="p", system=False, config={"lr": 0.1, "layers": 2}).start()
    for step in range(1, 41):
        loss = math.nan if step == 10 else math.inf if step == 11 else 2.0 / step
        a.log({"loss": loss, "eval/loss": 1.0 / step if step % 10 == 0 else None}, step=step)
    a.event("checkpoint", step=20, path="ckpt-20")
    a.finish()
    x = Tracker(
        dir=root, name=XSS, project=NASTY, tags=[NASTY], system=False, config={"lr": 0.2, NASTY: NASTY}
    )
    x.start()
    for step in range(1, 21):
        x.log({"loss": 3.0 / step}, step=step)
    x.finish("failed")
    return a.id, x.id


def embedded(html: str) -> dict[str, Any]:
    """The report's data, read the way its page reads it (JSON.parse of the block's text)."""
    (block,) = re.findall(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    return json.loads(block)


# -- launchers: the environment variables each one sets (tests of rank detection and run metadata) --
LAUNCH_VARS = [
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
    "CROSS_RANK",
    "CROSS_SIZE",
    "LOCAL_SIZE",
    "TORCHELASTIC_RUN_ID",
    "MASTER_ADDR",
    "MASTER_PORT",
    "LSB_JOBID",
    "PBS_JOBID",
    "CUDA_VISIBLE_DEVICES",
]
LAUNCH_PREFIXES = ("ACCELERATE_", "OMPI_", "PMIX_", "SLURM_")


def setenv(monkeypatch, **values: object) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, str(value))


def torchrun_env(rank: int, run_id: str = "job7", port: int = 29500) -> dict[str, object]:
    return dict(
        RANK=rank,
        LOCAL_RANK=rank % 2,
        WORLD_SIZE=4,
        LOCAL_WORLD_SIZE=2,
        GROUP_RANK=rank // 2,
        TORCHELASTIC_RUN_ID=run_id,
        MASTER_ADDR="node0",
        MASTER_PORT=port,
    )


class CountingSource:
    """A system-metrics source (``Tracker(system_sources=[...])``) whose CPU reading counts its
    samples, so a test knows every value it recorded."""

    name = "fake"
    samples = 0

    def sample(self) -> dict[str, float]:
        self.samples += 1
        return {"cpu.percent": float(self.samples), "gpu.0.util": 80.0}

    def close(self) -> None: ...
