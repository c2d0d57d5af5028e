"""``tunetrack sync``: local runs copied to a bucket and back, incrementally and idempotently, a live
run synced twice, and a dead process's unsent spool delivered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from support.helpers import SRC, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.errors import RunNotFound
from tunetrack.reader import open_run
from tunetrack.store import StoreUnavailable

from .proxy import FaultProxy


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


def loss_steps(run_id: str, url: str) -> list[int] | None:
    """The run's loss steps as the store at ``url`` holds them; None while the store does not answer."""
    try:
        return open_run(run_id, dir=url).series("loss").steps.tolist()
    except (StoreUnavailable, RunNotFound):
        return None


def sync(*args: str) -> str:
    result = CliRunner().invoke(cli, ["sync", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_local_run_is_copied_once_and_a_second_sync_sends_nothing_old(
    root: Path, s3_proxy: tuple[str, FaultProxy]
) -> None:
    url, proxy = s3_proxy
    with Tracker(dir=root, name="local", config={"lr": 0.1}, system=False) as t:
        for step in range(1, 301):
            t.log({"loss": 1.0 / step}, step=step)
        t.log_image("sample", [[0, 255], [255, 0]], step=300)
    out = sync("--to", url, "--dir", root)
    assert "in 1 runs" in out and "1 files" in out
    run = open_run("local", dir=url)
    assert (run.state, run.config, len(run.series("loss"))) == ("finished", {"lr": 0.1}, 300)
    (image,) = [e for e in run.events() if e["kind"] == "image"]
    assert run.read_media(image["path"]).startswith(b"\x89PNG")
    proxy.requests.clear()
    assert "nothing new to send" in sync("--to", url, "--dir", root)
    assert not [r for r in proxy.requests if r[0] == "PUT"]  # nothing was written again
    # and back: the bucket to another folder
    back = root.parent / "back"
    sync("--to", back, "--dir", url)
    assert open_run("local", dir=back).series("loss").values.tolist() == run.series("loss").values.tolist()
    assert "nothing new to send" in sync("--to", back, "--dir", url)


def test_a_live_run_synced_twice_ends_complete(root: Path, s3_url: str) -> None:
    t = Tracker(dir=root, name="live", system=False).start()
    for step in range(1, 101):
        t.log({"loss": float(step)}, step=step)
    t.flush()
    sync("--to", s3_url, "--dir", root, t.id)
    assert open_run(t.id, dir=s3_url).series("loss").steps.tolist() == list(range(1, 101))
    for step in range(101, 201):
        t.log({"loss": float(step)}, step=step)
    t.finish()
    sync("--to", s3_url, "--dir", root, t.id)
    run = open_run(t.id, dir=s3_url)
    assert run.state == "finished" and run.series("loss").steps.tolist() == list(range(1, 201))


def test_a_dead_process_unsent_spool_is_delivered(s3_proxy: tuple[str, FaultProxy], tmp_path: Path) -> None:
    url, proxy = s3_proxy
    code = """
import sys, time
from tunetrack import Tracker
t = Tracker(dir=sys.argv[1], name="stranded", system=False, upload_interval=0.3).start()
for step in range(1, 101):
    t.log({"loss": float(step)}, step=step)
t.flush(); time.sleep(1.0)
print(t.id, flush=True)           # the first 100 steps are uploaded
sys.stdin.readline()              # the store goes down meanwhile
for step in range(101, 201):
    t.log({"loss": float(step)}, step=step)
t.flush()
print("logged", flush=True)
time.sleep(60)
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code, url],
        env={**os.environ, "PYTHONPATH": SRC},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run_id = proc.stdout.readline().strip()
    proxy.close()
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "logged"
    os.kill(proc.pid, signal.SIGKILL)  # the machine is lost before the store comes back
    proc.wait(timeout=10)
    proxy.reopen()
    wait_until(lambda: loss_steps(run_id, url) is not None)
    assert loss_steps(run_id, url) == list(range(1, 101))
    out = sync("--to", url)  # no --dir: the default local store (none here) and this machine's spool
    assert "spool" in out or "sent" in out
    steps = open_run(run_id, dir=url).series("loss").steps.tolist()
    assert steps == list(range(1, 201))
    assert "nothing new to send" in sync("--to", url)
