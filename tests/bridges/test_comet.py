"""The Comet backend in offline mode (``COMET_START_ONLINE=false``, archives in ``COMET_OFFLINE_DIRECTORY``,
what ``comet upload`` sends), with the run's default settings (``backend_timeout`` left alone). Each
training script runs in a process of its own, as a real one does, and its archive is read back with
comet_ml's own tools, not tunetrack's reader: comet_ml's message classes (what ``comet upload`` parses
each line of the messages file with) for every metric point's step and value, the params and the
Others, and ``comet offline --csv`` (comet_ml's archive explorer) for the tags and the project. Compared value by value with what
tunetrack stored; ``sync-backend`` fills a gap into a second archive of the same experiment and a
second call writes nothing."""

from __future__ import annotations

import ast
import csv
import io
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from support.comet_files import (
    comet_others,
    comet_params,
    comet_points,
    comet_remote_models,
    comet_texts,
    started,
)
from support.helpers import SRC, run_script
from tunetrack.backends.comet import experiment_key
from tunetrack.reader import open_run


@pytest.fixture
def comet_env(tmp_path) -> dict[str, str]:
    """Comet's own settings for offline mode, as a training script's environment."""
    return {
        "COMET_START_ONLINE": "false",
        "COMET_OFFLINE_DIRECTORY": str(tmp_path / "comet"),
    }


def archives(comet_env: dict[str, str], run_id: str) -> list[Path]:
    return sorted(Path(comet_env["COMET_OFFLINE_DIRECTORY"]).glob(f"{experiment_key(run_id)}*.zip"))


def comet_offline_csv(archive: Path) -> dict[str, dict[str, str]]:
    """``comet offline --csv``: comet_ml's own explorer of an archive, ``{section: {name: value}}``
    (its detail rows: the last value of each param, Other and data field)."""
    proc = subprocess.run(
        [sys.executable, "-m", "comet_ml.scripts.comet_offline", "--csv", "--level", "detail", str(archive)],
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for row in csv.DictReader(io.StringIO(proc.stdout)):
        out[row["section"]][row["name"]] = row["value"]
    return out


def stored(run, key: str) -> list[tuple[int, float]]:
    """``(step, value)`` of every point of ``key`` in the tunetrack run, bools as Comet gets them (0/1)."""
    return [
        (r["step"], int(v) if isinstance(v, bool) else v) for r in run.rows() if (v := r.get(key)) is not None
    ]


TRAIN = """
    import os, sys, time
    from tunetrack import Tracker

    class FakeGpu:  # system samples as the NVIDIA source names them, so the mapping is exercised on CPU
        name = "fake-gpu"
        n = 0
        def sample(self):
            self.n += 1
            return {{"gpu.0.util": 50.0 + self.n % 7, "gpu.0.memory.used_bytes": 2e9, "gpu.0.power_w": 150.0,
                    "mem.percent": 41.0, "gpu.0.odd": 1.0}}
        def close(self): ...

    steps, gpu = int(sys.argv[1]), FakeGpu()
    t = Tracker(
        dir=sys.argv[2], project="sft", name="mirror", tags=["baseline", "lora"],
        config={{"lr": 3e-4, "model": {{"layers": 2, "name": "tiny"}}, "fp16": True, "targets": ["q", "v"]}},
        system_sources=[gpu], system_interval=0.05, {backends}
    ).start()
    while gpu.n < 3:
        time.sleep(0.01)
    for step in range(1, steps + 1):
        row = {{"train/loss": 2.0 / step, "lr": 3e-4, "note": "text", "packed": step % 2 == 0}}
        if step % 100 == 0:
            row["eval/loss"] = 1.0 / step
        t.log(row, step=step)
    t.log_text("samples", [{{"text": "Once upon a time", "reward": 0.5}}], step=steps)
    saved = sys.argv[2] + "-checkpoint"
    os.makedirs(saved)
    open(os.path.join(saved, "model.safetensors"), "wb").write(b"w" * 64)
    t.log_checkpoint(saved, step=steps, metrics={{"eval/loss": 0.25}})
    t.finish()
    print(t.id)
"""


@pytest.mark.parametrize(
    ("steps", "backends", "by_env"),
    [(30, 'backends=["comet"]', False), (3000, "", True)],
    ids=["short", "long-by-env"],
)
def test_a_run_mirrored_into_comet_offline(root, comet_env, steps, backends, by_env):
    """Named in the Tracker, or (the long run) by ``TUNETRACK_BACKENDS=comet`` alone; the default
    ``backend_timeout``."""
    env = {**comet_env, **({"TUNETRACK_BACKENDS": "comet"} if by_env else {})}
    proc = run_script(TRAIN.format(backends=backends), str(steps), str(root), env=env, timeout=300)
    run_id = proc.stdout.split()[-1]
    run = open_run(run_id, dir=root)
    assert run.counters() == {}, f"the mirror missed rows: {run.counters()}\n{proc.stderr}"
    (archive,) = archives(comet_env, run_id)

    assert comet_params(archive) == {
        "lr": 3e-4,
        "model|layers": 2,
        "model|name": "tiny",
        "fp16": True,
        "targets": ["q", "v"],
        "curr_step": steps,  # Comet's own: the step it is at
    }
    explored = comet_offline_csv(archive)
    assert explored["param"]["model|layers"] == "2"  # what comet_ml's explorer shows
    others = comet_others(archive)
    assert others["Name"] == "mirror" and others["tunetrack.run_id"] == run_id
    assert others["tunetrack.state"] == "finished" and others["hasNestedParams"] is True
    assert sorted(ast.literal_eval(explored["data"]["tags"])) == ["baseline", "lora"]
    assert explored["data"]["url"].split("/")[1] == "sft"  # the run's project, with Comet's left unset

    points = comet_points(archive)
    assert points.pop("process duration")  # Comet's own, at end()
    # system metrics under the names and units of Comet's own monitor (others under sys.)
    system = {key: [(r["step"], r[key]) for r in run.system_rows() if key in r] for key in run.system_keys()}
    for key, name, scale in [
        ("gpu.0.util", "sys.gpu.0.gpu_utilization", 1),
        ("gpu.0.memory.used_bytes", "sys.gpu.0.used_memory", 1),
        ("gpu.0.power_w", "sys.gpu.0.power_usage", 1000),  # milliwatts, as NVML reports to Comet
        ("mem.percent", "sys.ram.percent.used", 1),
        ("gpu.0.odd", "sys.gpu.0.odd", 1),
    ]:
        assert len(system[key]) >= 3
        assert points.pop(name) == [(s, v * scale) for s, v in system[key]], key
    # "note", a string, is not sent; "eval/loss" only from step 100
    assert set(points) == {"train/loss", "lr", "packed"} | ({"eval/loss"} if steps >= 100 else set())
    for key in points:
        assert points[key] == stored(run, key), key
    assert len(points["train/loss"]) == steps
    assert comet_texts(archive) == [
        {"tunetrack.key": "samples", "reward": 0.5, "step": steps, "text": "Once upon a time"}
    ]
    # the checkpoint as a remote model: where it is, never its bytes
    saved = Path(f"{root}-checkpoint")
    assert comet_remote_models(archive) == {
        f"checkpoint-{steps}": [
            {"url": saved.as_uri(), "metadata": {"step": steps, "kind": None, "eval/loss": 0.25}}
        ]
    }


def test_a_failed_run_and_a_resume_continue_one_experiment(root, comet_env):
    """Each attempt writes an archive of its own with the same experiment key (``comet upload``
    appends them to one experiment); the state of each is recorded."""
    first = run_script(
        f"""
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, name="resumable", system=False, backends=["comet"]).start()
        print(t.id)
        for step in range(1, 81):
            t.log({{"loss": 1.0}}, step=step)
        raise RuntimeError("diverged")
        """,
        env=comet_env,
        check=False,
    )
    assert "diverged" in first.stderr
    run_id = first.stdout.split()[-1]
    run_script(
        f"""
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, resume={run_id!r}, resume_step=50, system=False, backends=["comet"]).start()
        for step in range(51, 101):
            t.log({{"loss": 2.0}}, step=step)
        t.finish()
        """,
        env=comet_env,
    )
    one, two = sorted(archives(comet_env, run_id), key=started)
    assert comet_others(one)["tunetrack.state"] == "failed"
    assert comet_others(two)["tunetrack.state"] == "finished"
    assert comet_others(two)["tunetrack.rewound_to"] == 50
    assert [s for s, _ in comet_points(one)["loss"]] == list(range(1, 81))
    assert comet_points(two)["loss"] == [(s, 2.0) for s in range(51, 101)]


def test_sync_backend_fills_the_gap_into_the_same_experiment(root, comet_env):
    """Steps 1-100 mirrored live; 101-200 recorded by a resumed process without the mirror (Comet's
    archive lacks them); ``sync-backend`` reads what the archives hold and writes only the rest, into a
    second archive of the same experiment; a second call has nothing to send and writes no archive."""
    proc = run_script(
        f"""
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, name="gap", config={{"lr": 0.1}}, system=False, backends=["comet"]).start()
        for step in range(1, 101):
            t.log({{"loss": 1.0 / step}}, step=step)
        t.finish()
        t = Tracker(dir={str(root)!r}, resume=t.id, system=False).start()
        for step in range(101, 201):
            t.log({{"loss": 1.0 / step, "acc": step / 200}}, step=step)
        t.finish()
        print(t.id)
        """,
        env=comet_env,
    )
    run_id = proc.stdout.split()[-1]
    env = {**os.environ, **comet_env, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "tunetrack", "sync-backend", run_id, "--to", "comet", "--dir", str(root)]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "200 points" in first.stdout  # 100 of loss, 100 of acc
    live, replayed = sorted(archives(comet_env, run_id), key=started)
    assert [s for s, _ in comet_points(live)["loss"]] == list(range(1, 101))
    assert [s for s, _ in comet_points(replayed)["loss"]] == list(range(101, 201))
    run = open_run(run_id, dir=root)
    together = comet_points(live)["loss"] + comet_points(replayed)["loss"]
    assert together == stored(run, "loss")
    assert comet_points(replayed)["acc"] == stored(run, "acc")
    assert comet_params(replayed)["lr"] == 0.1

    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and "nothing new to send" in second.stdout, second.stderr
    assert len(archives(comet_env, run_id)) == 2


def test_a_users_own_comet_experiment_is_left_running(root, comet_env):
    """comet_ml ends the process's current experiment when another one starts: the mirror's is started
    aside, so the user's own experiment keeps logging and is the one ``comet_ml`` still hands out."""
    proc = run_script(
        f"""
        import comet_ml
        from tunetrack import Tracker
        mine = comet_ml.start(project_name="mine", experiment_config=comet_ml.ExperimentConfig(name="user's"))
        t = Tracker(dir={str(root)!r}, name="mirror", system=False, backends=["comet"]).start()
        for step in range(1, 21):
            t.log({{"loss": 1.0}}, step=step)
            mine.log_metric("user_metric", step, step=step)
        t.finish()
        assert comet_ml.get_running_experiment() is mine and mine.alive
        mine.log_metric("user_metric", 21, step=21)
        mine.end()
        print(t.id)
        """,
        env=comet_env,
    )
    run_id = proc.stdout.split()[-1]
    (mirror,) = archives(comet_env, run_id)
    assert [s for s, _ in comet_points(mirror)["loss"]] == list(range(1, 21))
    (users,) = [a for a in Path(comet_env["COMET_OFFLINE_DIRECTORY"]).glob("*.zip") if a != mirror]
    assert [s for s, _ in comet_points(users)["user_metric"]] == list(range(1, 22))
    assert "loss" not in comet_points(users)


def test_a_comet_server_that_is_down_costs_training_nothing(root, tmp_path):
    """Online, with Comet's server unreachable: the mirror's thread waits on it, training does not;
    ``finish()`` gives it the default time and counts what it missed (``sync-backend`` fills it once the
    server is back; not testable here)."""
    env = {
        "COMET_API_KEY": "0123456789abcdef0123456789",
        "COMET_URL_OVERRIDE": "http://127.0.0.1:9/clientlib/",  # nothing listens on port 9
        "COMET_OFFLINE_DIRECTORY": str(tmp_path / "comet"),
    }
    proc = run_script(
        f"""
        import time
        from tunetrack import Tracker
        t = Tracker(dir={str(root)!r}, name="down", system=False, backends=["comet"]).start()
        began = time.perf_counter()
        for step in range(1, 1001):
            t.log({{"loss": 1.0 / step}}, step=step)
            if step % 100 == 0:
                t.flush()
        print(time.perf_counter() - began)
        t.finish()
        print(t.id)
        """,
        env=env,
        timeout=120,
    )
    logging_s, run_id = proc.stdout.split()[-2:]
    assert float(logging_s) < 5  # 1,000 log() calls never waited on the server
    run = open_run(run_id, dir=root)
    assert run.series("loss").steps.tolist() == list(range(1, 1001))  # the local run is complete
    assert run.counters() == {"backend_missed/comet": 1000}
    assert "backend comet did not get 1,000 of 1,000 rows" in proc.stderr


def test_without_comet_ml_the_backend_and_the_importer_say_so_in_one_line(root, tmp_path):
    """comet_ml is imported only when the backend starts or an import reads archives; missing, it is
    one line each (the backend is disabled for the run, the run goes on)."""
    proc = run_script(
        f"""
        import sys
        sys.modules["comet_ml"] = None  # as if not installed
        import tunetrack.backends.comet, tunetrack.bridges.importers.comet  # importable without it
        from tunetrack import Tracker
        from tunetrack.cli import main
        t = Tracker(dir={str(root)!r}, name="no-comet", system=False, backends=["comet"]).start()
        t.log({{"loss": 1.0}}, step=1)
        t.finish()
        sys.argv = ["tunetrack", "import", "comet", {str(tmp_path)!r}, "--dir", {str(root)!r}]
        main()
        """,
        check=False,
    )
    assert "ImportError: the comet backend needs comet_ml: pip install 'tunetrack[comet]'" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: importing Comet archives needs comet_ml: pip install 'tunetrack[comet]'"
    )
    assert open_run("no-comet", dir=root).series("loss").steps.tolist() == [1]


def test_a_backend_cut_off_by_finish_still_leaves_a_whole_archive(root, comet_env):
    """Every row is sent, then ``finish()`` runs out of time (a ``backend_timeout`` far too short, as
    on a loaded machine), before or while comet_ml's ``end()`` writes the archive: the process's exit
    ends the experiment or waits for its end, so the archive is whole and holds every point."""
    proc = run_script(
        f"""
        import time
        from tunetrack import Tracker
        from tunetrack.backends.comet import CometBackend
        backend = CometBackend()
        t = Tracker(dir={str(root)!r}, name="late", system=False, backends=[backend], backend_timeout=0.01).start()
        for step in range(1, 101):
            t.log({{"loss": 1.0 / step}}, step=step)
        t.flush()
        deadline = time.monotonic() + 120
        while backend._step != 100 and time.monotonic() < deadline:  # the backend has sent every row
            time.sleep(0.05)
        t.finish()
        print(t.id)
        """,
        env=comet_env,
    )
    run_id = proc.stdout.split()[-1]
    assert "backend comet got every row but did not confirm the run's end" in proc.stderr
    assert open_run(run_id, dir=root).counters() == {}
    (archive,) = archives(comet_env, run_id)
    assert comet_points(archive)["loss"] == stored(open_run(run_id, dir=root), "loss")
    # the state is there when the backend's finish() began before the time ran out
    assert comet_others(archive).get("tunetrack.state") in ("finished", None)
