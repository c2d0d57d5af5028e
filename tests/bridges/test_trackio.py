"""The trackio backend into trackio's local store (``TRACKIO_DIR``), read back through trackio's own
storage API in a fresh process: metrics with steps, the config, system metrics under trackio's names,
a failed run's alert, a resume continuing the same trackio run, and ``sync-backend`` sending only what
trackio lacks."""

from __future__ import annotations

import json

from support.helpers import run_script

READ = """
import json, sys
from trackio.sqlite_storage import SQLiteStorage as S
project, run = sys.argv[1], sys.argv[2]
print(json.dumps({
    "runs": S.get_runs(project),
    "logs": S.get_logs(project, run),
    "system": S.get_system_logs(project, run),
    "config": S.get_run_config(project, run),
    "alerts": S.get_alerts(project, run),
}, default=str))
"""


def read(env: dict[str, str], project: str, run: str) -> dict:
    return json.loads(run_script(READ, project, run, env=env).stdout.strip().splitlines()[-1])


def steps(logs: list[dict], key: str) -> list[int]:
    return [entry["step"] for entry in logs if key in entry]


def test_a_run_mirrored_into_trackio(root, tmp_path):
    env = {"TRACKIO_DIR": str(tmp_path / "trackio")}
    run_script(
        f"""
        import time
        from tunetrack import Tracker

        class Gpu:
            name = "fake-gpu"
            def sample(self):
                return {{"gpu.0.util": 61.0, "gpu.0.memory.used_bytes": 2 * 2**30, "cpu.percent": 12.0}}
            def close(self): ...

        t = Tracker(dir={str(root)!r}, project="sft", name="mirror", config={{"lr": 3e-4, "model": {{"layers": 2}}}},
                    backends=["trackio"], system_sources=[Gpu()], system_interval=0.2).start()
        for step in range(1, 101):
            row = {{"train/loss": 2.0 / step, "note": "text"}}
            if step % 50 == 0:
                row["eval/loss"] = 1.0 / step
            t.log(row, step=step)
        time.sleep(0.5)
        t.finish()
        """,
        env=env,
    )
    got = read(env, "sft", "mirror")
    assert got["runs"] == ["mirror"]
    assert steps(got["logs"], "train/loss") == list(range(1, 101))
    assert [e["train/loss"] for e in got["logs"]] == [2.0 / s for s in range(1, 101)]
    assert steps(got["logs"], "eval/loss") == [50, 100]
    assert not any("note" in e for e in got["logs"])
    assert got["config"]["lr"] == 3e-4 and got["config"]["model"] == {"layers": 2}
    system = got["system"]
    assert system and system[0]["gpu/0/utilization"] == 61.0 and system[0]["gpu/0/allocated_memory"] == 2.0
    assert system[0]["cpu.percent"] == 12.0
    assert got["alerts"] == []  # finished: nothing to say


def test_a_failed_run_alerts_and_a_resume_continues_the_same_trackio_run(root, tmp_path):
    env = {"TRACKIO_DIR": str(tmp_path / "trackio"), "TUNETRACK_BACKENDS": "trackio"}
    first = run_script(
        f"""
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, project="p", name="resumable", system=False).start()
        print(t.id)
        for step in range(1, 41):
            t.log({{"loss": 1.0}}, step=step)
        raise RuntimeError("diverged")
        """,
        env=env,
        check=False,
    )
    assert "diverged" in first.stderr
    run_id = first.stdout.split()[0]
    got = read(env, "p", "resumable")
    assert steps(got["logs"], "loss") == list(range(1, 41))
    assert [a["title"] for a in got["alerts"]] == ["run failed"]
    run_script(
        f"""
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, resume={run_id!r}, system=False).start()
        for step in range(41, 61):
            t.log({{"loss": 2.0}}, step=step)
        t.finish()
        """,
        env=env,
    )
    got = read(env, "p", "resumable")
    assert got["runs"] == ["resumable"]  # one trackio run for the whole tunetrack run
    assert steps(got["logs"], "loss") == list(range(1, 61))


def test_sync_backend_sends_only_what_trackio_lacks(root, tmp_path):
    env = {"TRACKIO_DIR": str(tmp_path / "trackio")}
    run_script(
        f"""
        from tunetrack import Tracker
        with Tracker(dir={str(root)!r}, project="p", name="offline", system=False) as t:
            for step in range(1, 31):
                t.log({{"loss": 1.0 / step}}, step=step)
        """,
        env=env,
    )
    cmd = "import sys; from tunetrack.cli import main; sys.argv = ['tunetrack', *sys.argv[1:]]; main()"
    args = ("sync-backend", "offline", "--to", "trackio", "--dir", str(root))
    first = run_script(cmd, *args, env=env)
    assert "30 points" in first.stdout
    assert steps(read(env, "p", "offline")["logs"], "loss") == list(range(1, 31))
    second = run_script(cmd, *args, env=env)
    assert "nothing new to send" in second.stdout
    assert steps(read(env, "p", "offline")["logs"], "loss") == list(range(1, 31))
