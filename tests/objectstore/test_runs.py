"""Runs in object storage, against a real S3-compatible server (moto's, on 127.0.0.1) through the same
client code that talks to AWS: written, read back exactly by another process, killed, cut off from
the store, spread over two "nodes" with no shared disk, listed cheaply, read from the local cache."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from support.helpers import SRC, free_port, wait_until
from tunetrack import Tracker
from tunetrack.cli import cli
from tunetrack.reader import list_runs, open_run
from tunetrack.reader.where import select

from .proxy import FaultProxy


@pytest.fixture(autouse=True)
def local_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own spool and download cache (another machine's, so to speak)."""
    monkeypatch.setenv("TUNETRACK_SPOOL", str(tmp_path / "spool"))
    monkeypatch.setenv("TUNETRACK_CACHE", str(tmp_path / "cache"))


def python(code: str, *args: str, env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_a_run_in_s3_reads_back_exactly_in_another_process(s3_url: str) -> None:
    expected = []
    with Tracker(
        dir=s3_url, name="exact", project="p", config={"lr": 3e-4, "lora": {"r": 16}}, system=False
    ) as t:
        for step in range(1, 2001):
            row = {"loss": 2.0 / step, "lr": 3e-4 * (1 - step / 2000), "epoch": step // 100}
            if step % 500 == 0:
                row.update(eval_loss=1.0 / step, note=f"checkpoint {step}", flag=step == 1000)
            t.log(row, step=step)
            expected.append({"step": step, **row})
        t.event("checkpoint", step=2000, path="/ckpt/2000")
    code = """
import json, sys
from tunetrack import open_run
r = open_run(sys.argv[1], dir=sys.argv[2])
rows = [{k: v for k, v in row.items() if k != "time"} for row in r.rows()]
print(json.dumps({"state": r.state, "rows": rows, "config": r.config, "events": r.events(), "name": r.name}))
"""
    proc = python(code, t.id, s3_url)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    got = json.loads(out)
    assert (got["state"], got["name"]) == ("finished", "exact")
    assert got["rows"] == expected  # every step and value, ints and bools and strings as logged
    assert got["config"] == {"lr": 3e-4, "lora": {"r": 16}}
    assert [(e["kind"], e["step"], e["path"]) for e in got["events"]] == [("checkpoint", 2000, "/ckpt/2000")]
    # the CLI, in this process, with a fresh cache
    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["ls", "--dir", s3_url, "--json"]).output)
    assert [(r["id"], r["state"], r["last_step"], r["last"]["loss"]) for r in listed] == [
        (t.id, "finished", 2000, 2.0 / 2000)
    ]
    shown = json.loads(runner.invoke(cli, ["show", "exact", "--dir", s3_url, "--json"]).output)
    assert shown["summary"]["loss"]["count"] == 2000 and shown["summary"]["eval_loss"]["count"] == 4
    csv = runner.invoke(cli, ["export", t.id, "--dir", s3_url, "--format", "csv"]).output.splitlines()
    assert len(csv) == 2001 and csv[0].startswith("step,time,")


def test_a_killed_process_reads_crashed_and_keeps_all_but_the_last_interval(
    s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUNETRACK_STALE_AFTER", "3")
    code = """
import sys, time
from tunetrack import Tracker
t = Tracker(dir=sys.argv[1], name="doomed", system=False, upload_interval=1.0).start()
print(t.id, flush=True)
step = 0
while True:
    step += 1
    t.log({"loss": float(step)}, step=step)
    if step % 10 == 0:
        print(step, time.time(), flush=True)
    time.sleep(0.01)
"""
    proc = python(code, s3_url)
    run_id = proc.stdout.readline().strip()
    logged: list[tuple[int, float]] = []
    while not logged or logged[-1][1] - logged[0][1] < 4.0:
        step, when = proc.stdout.readline().split()
        logged.append((int(step), float(when)))
    os.kill(proc.pid, signal.SIGKILL)
    killed_at = time.time()
    proc.wait(timeout=10)
    # everything logged more than one upload interval (plus the writer's 1 s flush) before the kill
    safe = max(step for step, when in logged if when < killed_at - 2.0 - 0.5)
    wait_until(lambda: open_run(run_id, dir=s3_url).state == "crashed", timeout=30)
    run = open_run(run_id, dir=s3_url)
    steps = run.series("loss").steps.tolist()
    assert steps[:safe] == list(range(1, safe + 1))
    assert run.series("loss").values.tolist() == [float(s) for s in steps]
    (listed,) = list_runs(dir=s3_url)
    assert (listed.id, listed.state) == (run_id, "crashed")


def test_the_store_down_for_a_while_costs_training_nothing_and_loses_nothing(
    s3_proxy: tuple[str, FaultProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tunetrack.store import blobs

    url, proxy = s3_proxy
    # every request to the store, recorded with the thread that makes it and whether log() was running
    in_log, asked = [False], []

    def recorded(name: str) -> Any:
        call = getattr(blobs.ObstoreBlobs, name)

        def request(self: Any, *args: Any, **kwargs: Any) -> Any:
            asked.append((name, threading.get_ident(), in_log[0]))
            return call(self, *args, **kwargs)

        return request

    for name in ("put", "get", "get_with_meta", "head", "put_file", "get_file", "list_blobs", "delete"):
        monkeypatch.setattr(blobs.ObstoreBlobs, name, recorded(name))
    training = threading.get_ident()
    t = Tracker(dir=url, name="outage", system=False, upload_interval=0.5).start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(1, 3001):
            if step == 500:
                proxy.close()  # the store is gone
            if step == 2000:
                proxy.reopen()
            if step == 2500:
                proxy.throttle(20)  # and then it throttles: 503 SlowDown
            in_log[0] = True
            t.log({"loss": 1.0 / step, "step_mod": step % 7}, step=step)
            in_log[0] = False
            if step % 100 == 0:
                time.sleep(0.1)  # about 3 s of training, 1.5 s of it with the store down
        t.finish()
    # log() never waited for the network: the training thread made no request inside it, the
    # uploads were the writer's
    assert not [a for a in asked if a[1] == training and a[2]]
    assert [a for a in asked if a[1] != training and a[0] == "put"]
    uploads = [str(w.message) for w in caught if "cannot upload" in str(w.message)]
    assert len(uploads) == 1 and "waits in the local spool" in uploads[0]  # once, not per retry
    run = open_run(t.id, dir=url)
    assert run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 3001))  # nothing lost, nothing twice
    upload = run.meta["processes"][0]["end"]["upload"]
    assert upload["failed_attempts"] >= 1 and upload["max_lag_s"] >= 0.5 and upload["unsent_bytes"] == 0


def test_two_nodes_without_a_shared_disk_land_in_one_run(s3_url: str, tmp_path: Path) -> None:
    port = free_port()
    code = """
import sys
from tunetrack import Tracker
t = Tracker(dir=sys.argv[1], project="multi", system_interval=0.2, upload_interval=0.5).start()
for step in range(1, 21):
    t.log({"loss": 1.0 / step}, step=step)
import time; time.sleep(1.5)
t.finish()
print(t.id, flush=True)
"""
    common = {
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "TORCHELASTIC_RUN_ID": f"job-{port}",
    }
    nodes = [
        python(
            code,
            s3_url,
            env={
                **common,
                "RANK": str(r),
                "LOCAL_RANK": "0",
                "GROUP_RANK": str(r),
                "TUNETRACK_SPOOL": str(tmp_path / f"node{r}-spool"),
                "TUNETRACK_SYSTEM": "1",
            },
        )
        for r in (0, 1)
    ]
    outs = [p.communicate(timeout=120) for p in nodes]
    assert all(p.returncode == 0 for p in nodes), [err for _, err in outs]
    (run,) = list_runs(dir=s3_url)
    assert run.project == "multi" and run.state == "finished"
    assert run.series("loss").steps.tolist() == list(range(1, 21))
    assert len(run.nodes) == 2 and {n.split(":")[0] for n in run.nodes} == {"node0", "node1"}
    for node in run.nodes:
        assert len(run.system_series("cpu.percent")[node]) >= 2


def test_listing_costs_a_few_requests_and_a_second_look_downloads_nothing_old(
    s3_proxy: tuple[str, FaultProxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, proxy = s3_proxy
    ids = []
    for i in range(60):
        with Tracker(dir=url, name=f"r{i}", system=False, config={"i": i}) as t:
            t.log({"loss": float(i)}, step=1)
        ids.append(t.id)
    proxy.requests.clear()
    runs = list_runs(dir=url)
    assert sorted(r.id for r in runs) == sorted(ids)
    assert {r.state for r in runs} == {"finished"} and {r.latest()["values"]["loss"] for r in runs} == {
        float(i) for i in range(60)
    }
    first = proxy.count()
    # the first listing ever: the (absent) pointer to the newest compact object, the log's head, the
    # index and the (absent) compact objects listed, each entry fetched once, and the ended entries
    # written into one compact object, and the pointer to it
    assert proxy.count("GET") == 60 + 5 and proxy.count("PUT") == 2, proxy.requests
    proxy.requests.clear()
    monkeypatch.setenv("TUNETRACK_CACHE", str(Path(os.environ["TUNETRACK_CACHE"]).parent / "other-machine"))
    assert len(list_runs(dir=url)) == 60
    # another machine: the pointer, the compact object it names, the log past it (nothing listed)
    assert proxy.count() == 3, proxy.requests
    assert not [target for _, target, _ in proxy.requests if "list-type" in target]
    proxy.requests.clear()
    assert len(list_runs(dir=url)) == 60
    assert proxy.count() == 1, proxy.requests  # a second look: the next log record, not there
    assert first > proxy.count()
    # a sweep's question (a config value, an aggregate) and ls --json's summary: the index entries
    # hold the end records, which hold both: no request per run
    proxy.requests.clear()
    picked = select(list_runs(dir=url), "config.i >= 30 and loss:min >= 50", "loss:min:desc")
    assert [r.name for r in picked] == [f"r{i}" for i in range(59, 49, -1)]
    assert all(r.summary()["loss"]["min"] >= 50 for r in picked)
    assert proxy.count() == 1, proxy.requests
    # a run's data: downloaded once
    run = open_run(ids[0], dir=url)
    assert run.series("loss").values.tolist() == [0.0]
    proxy.requests.clear()
    again = open_run(ids[0], dir=url)
    assert again.series("loss").values.tolist() == [0.0]
    gets = [target for method, target, _ in proxy.requests if method == "GET" and ".ttr" in target]
    assert gets == []  # the chunk came from the cache


def test_a_partial_or_damaged_chunk_is_never_read_as_data(s3_url: str) -> None:
    from tunetrack.store import open_store

    with Tracker(dir=s3_url, name="damaged", system=False) as t:
        for step in range(1, 101):
            t.log({"loss": float(step)}, step=step)
    store = open_store(s3_url)
    (chunk,) = [b for b in store.blobs.list_blobs(f"{t.id}/") if b.key.endswith(".ttr")]
    data = store.blobs.get(chunk.key)
    # a writer cut off mid-object leaves no object (S3 PUTs are atomic); a damaged one is skipped
    store.blobs.put(chunk.key, data[: len(data) // 2])
    with pytest.warns(UserWarning, match="skipped"):
        steps = open_run(t.id, dir=s3_url).series("loss").steps.tolist()
    assert steps == list(range(1, len(steps) + 1)) and len(steps) < 100


def test_memory_urls_take_the_same_generic_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gs://`` and ``az://`` go through the same code as ``s3://``; here through fsspec's in-memory
    filesystem (no emulator of either runs here)."""
    url = f"memory://tunetrack-{os.getpid()}-{time.time_ns()}/runs"
    with Tracker(dir=url, name="mem", system=False, upload_interval=0.2) as t:
        for step in range(1, 51):
            t.log({"loss": math.exp(-step / 10)}, step=step)
    (run,) = list_runs(dir=url)
    assert (run.name, run.state, len(run.series("loss"))) == ("mem", "finished", 50)


def test_gs_and_az_urls_open_obstore_clients_and_its_code_path_runs_a_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """GCS and Azure: the URLs build obstore's own clients (nothing is sent: no service or emulator of
    either runs here), and a whole run goes through obstore's client code (put-if-absent, listing,
    ranged reads) with its in-memory store behind the same ``ObjectStore``."""
    from obstore.store import AzureStore, GCSStore, MemoryStore

    from tunetrack.store import blobs, open_store, remote
    from tunetrack.store.remote import ObjectStore

    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "devaccount")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "a2V5")
    assert isinstance(blobs.open_blobs("gs://bucket/runs")._store, GCSStore)  # type: ignore[attr-defined]
    assert isinstance(blobs.open_blobs("az://container/runs")._store, AzureStore)  # type: ignore[attr-defined]
    assert isinstance(open_store("gs://bucket/runs"), ObjectStore)

    memory = blobs.ObstoreBlobs("gs://bucket/runs", store=MemoryStore())
    monkeypatch.setattr(remote, "open_blobs", lambda url: memory)
    with Tracker(dir="gs://bucket/runs", name="gcs", system=False, upload_interval=0.2) as t:
        for step in range(1, 41):
            t.log({"loss": 1.0 / step}, step=step)
    assert not memory.put(f"{t.id}/run.json", b"{}", create=True)  # created once, never again
    (run,) = list_runs(dir="gs://bucket/runs")
    assert (run.id, run.state) == (t.id, "finished")
    assert open_run(t.id, dir="gs://bucket/runs").series("loss").steps.tolist() == list(range(1, 41))


def test_a_warm_listing_finds_new_runs_follows_live_ones_and_a_full_one_drops_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tunetrack.store import index, open_store
    from tunetrack.store.index import announce, entry_key, index_entry
    from tunetrack.store.index_entries import dumps

    url = f"memory://listing-{time.time_ns()}/runs"
    with Tracker(dir=url, name="a", system=False) as a:
        a.log({"loss": 1.0}, step=1)
    assert [r.name for r in list_runs(dir=url)] == ["a"]
    b = Tracker(dir=url, name="b", system=False, upload_interval=0.1).start()
    b.log({"loss": 0.5}, step=7)
    b.flush()
    wait_until(lambda: {r.name: r.state for r in list_runs(dir=url)}.get("b") == "running")
    wait_until(lambda: [r.latest()["step"] for r in list_runs(dir=url) if r.name == "b"] == [7])
    b.finish()
    assert {r.name: r.state for r in list_runs(dir=url)} == {"a": "finished", "b": "finished"}
    # a process on a machine whose clock is five minutes behind: its entry sorts before the newest, and
    # is found all the same (announced in the index's log, as every writer does)
    store = open_store(url)
    late = index_entry(
        {"id": "late0001", "name": "late"},
        "h-1-1",
        {"start": time.time() - 300},
        None,
        {"state": "finished", "time": time.time()},
        time.time(),
    )
    late_key = entry_key("late0001", "h-1-1", time.time() - 300)
    store.blobs.put(late_key, dumps(late))
    announce(store.blobs, late_key)
    assert {r.name for r in list_runs(dir=url)} == {"a", "b", "late"}
    # a deleted run: gone once the listing looks at the whole index again
    (key,) = [k.key for k in store.blobs.list_blobs(".index/") if f"-{a.id}-" in k.key]
    store.blobs.delete(key)
    monkeypatch.setattr(index, "FULL_EVERY", 0.0)
    assert {r.name for r in list_runs(dir=url)} == {"b", "late"}


def test_samples_and_their_images_read_from_the_bucket_as_from_a_folder(s3_url: str, tmp_path: Path) -> None:
    """Tables of samples (text, numbers, chat, an image) written to a bucket, read back by another
    process's reader and by ``tunetrack samples --json``, as from a folder."""
    from PIL import Image

    image = Image.new("RGB", (4, 4), (200, 10, 10))
    chat = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    with Tracker(dir=s3_url, name="grpo", system=False) as t:
        for step in (1, 2):
            t.log({"loss": 1.0 / step}, step=step)
            rows = [
                {
                    "prompt": "p" * 300,
                    "completion": f"c{step}-{i}",
                    "reward": i / 2,
                    "messages": chat,
                    "plot": image,
                }
                for i in range(3)
            ]
            t.log_table("completions", rows, step=step)
    run = open_run(t.id, dir=s3_url)
    assert run.sample_index() == {"completions": {1: 3, 2: 3}}
    got = run.samples("completions", step=2)
    assert [(s["row"]["completion"], s["row"]["reward"], s["row"]["messages"]) for s in got] == [
        (f"c2-{i}", i / 2, chat) for i in range(3)
    ]
    assert all(s["row"]["prompt"] == "p" * 300 for s in got)  # stored once, resolved on read
    assert run.sample_tables("completions")[0].columns()["plot"] == "image"
    path = got[0]["row"]["plot"]
    assert run.read_media(path) is not None  # the image is in the bucket with the run
    out = CliRunner().invoke(cli, ["samples", t.id, "completions", "--dir", s3_url, "--last", "--json"])
    assert out.exit_code == 0, out.output
    assert [r["row"]["completion"] for r in json.loads(out.output)] == ["c2-0", "c2-1", "c2-2"]
