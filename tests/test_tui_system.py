"""The terminal view's system tab, driven headless by Textual's pilot on runs real Trackers wrote: two
nodes of two GPUs each (NVML faked at its module boundary, as ``test_system`` does) give a heatmap row
per GPU per node, coloured by the scale and by the bucket rule; a live run's heatmap grows with its
samples and nothing is read while it does not; a run without GPUs, or without system metrics, says so."""

from __future__ import annotations

import asyncio
import os
import queue
import sys
import uuid
from typing import Any

from rich.text import Text
from textual.widgets import Static

from support.helpers import SRC, spawn_script
from support.tui import cells, until
from tunetrack import Tracker
from tunetrack.reader import Run, list_runs
from tunetrack.tui.app import TunetrackApp
from tunetrack.tui.palette import heat_colour

#: one node of a two-node job: its two (fake) GPUs sampled every 0.01 s while it trains; node 0's
#: first GPU is always busy and its second idle, node 1's first changes its utilization and memory
#: between samples
NODE = """
import sys, time
from support.fake_nvml import FakeGpu, FakeNvml
node = int(sys.argv[2])
fake = FakeNvml([FakeGpu(uuid=f"GPU-{node}a"), FakeGpu(uuid=f"GPU-{node}b")])
sys.modules["pynvml"] = fake.module()
sys.modules["amdsmi"] = None
from tunetrack import Tracker
from tunetrack.system import sampler
sampler.MIN_INTERVAL = 0.01  # several samples a bucket, so that a bucket's rule shows
first, second = fake.gpus
first.util, second.util = (100, 0) if node == 0 else (0, 50)
t = Tracker(dir=sys.argv[1], project="ddp", system_interval=0.01).start()
for k in range(100):
    if node == 1:
        first.util = k * 37 % 101
        first.used = first.total * (k * 53 % 101) // 100
    t.log({"loss": 1.0 / (k + 1)}, step=k + 1)
    time.sleep(0.02)
t.finish()
"""


def view(app: TunetrackApp) -> Text:
    content = app.query_one("#system-view", Static).content
    assert isinstance(content, Text)
    return content


def heatmaps(text: Text) -> dict[str, dict[str, list[str | None]]]:
    """Each heatmap on screen by title: its legend's colours (``"legend"``) and each row's, by label
    (None: a bucket with no sample). A row's buckets begin where the time axis begins."""
    lines = text.split("\n")
    indent = next((line.plain.index("0m00s") for line in lines if "0m00s" in line.plain), None)
    if indent is None:  # no time axis: nothing over time drawn
        return {}
    maps: dict[str, dict[str, list[str | None]]] = {}
    rows: dict[str, list[str | None]] | None = None
    for line in lines:
        plain = line.plain
        if plain.startswith("GPU "):
            rows = maps.setdefault(plain.split("  ")[0], {})
            rows["legend"] = [str(s.style) for s in line.spans if str(s.style).startswith("#")]
        elif rows is not None and plain.strip() and "0m00s" not in plain:
            colours: list[str | None] = [None] * (len(plain) - indent)
            for span in line.spans:
                for i in range(max(span.start, indent), span.end):
                    colours[i - indent] = str(span.style)
            rows[plain[:indent].strip()] = colours
        else:
            rows = None
    return maps


def close(shown: str | None, value: float, dark: bool) -> bool:
    """Whether a bucket's colour is the scale's colour of ``value`` percent (to a unit of rounding)."""
    want = heat_colour(value / 100, dark)
    return shown is not None and all(
        abs(int(shown[1 + 2 * i : 3 + 2 * i], 16) - want[i]) <= 1 for i in range(3)
    )


def expected(run: Run, key: str, node: str, columns: int, reduce: Any) -> list[float | None]:
    """A row's buckets worked out from the raw samples, one by one: the run's sampled span (every
    sample holds every GPU's values) cut into ``columns`` equal parts, each ``reduce`` of its samples."""
    times = [t for s in run.system_series(key).values() for t in s.times.tolist()]
    start, end = min(times), max(times)
    s = run.system_series(key)[node]
    found: list[list[float]] = [[] for _ in range(columns)]
    for t, v in zip(s.times.tolist(), s.values.tolist()):
        found[min(int((t - start) / (end - start) * columns), columns - 1)].append(v)
    return [reduce(b) if b else None for b in found]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_two_nodes_gpus_are_a_heatmap_row_each_coloured_by_the_bucket_rule(tmp_path):
    job, tests = uuid.uuid4().hex, os.path.dirname(__file__)
    procs = [
        spawn_script(
            NODE,
            str(tmp_path),
            str(node),
            env={
                "PYTHONPATH": SRC + os.pathsep + tests,
                "RANK": str(node),
                "LOCAL_RANK": "0",
                "WORLD_SIZE": "2",
                "LOCAL_WORLD_SIZE": "1",
                "GROUP_RANK": str(node),
                "TORCHELASTIC_RUN_ID": job,
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": "29556",
            },
        )
        for node in (1, 0)  # the other node first: it waits for rank 0
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    (run,) = list_runs(tmp_path, project="ddp")
    node1 = run.nodes[1]
    gpus = ["node0 gpu0", "node0 gpu1", "node1 gpu0", "node1 gpu1"]

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("3")
            await until(pilot, lambda: "node1 gpu1" in view(app).plain)
            maps = heatmaps(view(app))
            assert list(maps) == ["GPU utilization", "GPU memory used"]
            for rows in maps.values():
                assert [label for label in rows if label != "legend"] == gpus
            util, memory = maps["GPU utilization"], maps["GPU memory used"]
            assert close(util["legend"][0], 0, True) and close(util["legend"][-1], 100, True)
            busy, idle = util["node0 gpu0"], util["node0 gpu1"]
            columns = len(busy)
            sampled = [i for i, c in enumerate(busy) if c is not None]  # node 1 may have begun sooner
            assert len(sampled) > columns / 2 and busy[sampled[0]] != idle[sampled[0]]
            assert all(close(busy[i], 100, True) and close(idle[i], 0, True) for i in sampled)
            assert columns >= 10 and len(run.system_series("gpu.0.util")[node1]) >= 1.5 * columns
            want = expected(run, "gpu.0.util", node1, columns, mean)
            assert [c is None for c in util["node1 gpu0"]] == [v is None for v in want]
            assert all(v is None or close(c, v, True) for c, v in zip(util["node1 gpu0"], want))
            want = expected(run, "gpu.0.memory.percent", node1, columns, max)
            assert all(v is None or close(c, v, True) for c, v in zip(memory["node1 gpu0"], want))
            assert len({c for c in memory["node1 gpu0"] if c}) > 5  # the values did vary
            await pilot.press("t")  # a light background: the scale runs the other way
            await until(pilot, lambda: not app.current_theme.dark)
            first = sampled[0]
            await until(
                pilot, lambda: close(heatmaps(view(app))["GPU utilization"]["node0 gpu0"][first], 100, False)
            )
            assert close(heatmaps(view(app))["GPU utilization"]["node0 gpu1"][first], 0, False)

    asyncio.run(drive())


class Queued:
    """A system source that gives the rows put in its queue, one a sample, and nothing when empty (the
    sampler records nothing then)."""

    name = "queued"

    def __init__(self) -> None:
        self.rows: queue.Queue[dict[str, float]] = queue.Queue()

    def sample(self) -> dict[str, float]:
        try:
            return self.rows.get_nowait()
        except queue.Empty:
            return {}

    def close(self) -> None:
        """Nothing to release."""


def test_a_live_run_s_heatmap_grows_with_its_samples_and_nothing_is_read_meanwhile(tmp_path, monkeypatch):
    source = Queued()
    live = Tracker(name="live", dir=tmp_path, console=False, system_interval=0.1, system_sources=[source])
    live.start()
    live.log({"loss": 1.0}, step=1)  # nothing logged after: only its system samples grow
    reads: list[str] = []
    series = Run.system_series
    monkeypatch.setattr(Run, "system_series", lambda run, key: reads.append(key) or series(run, key))

    def sample(n: int) -> None:
        for i in range(n):
            source.rows.put({"gpu.0.util": 10.0 * i, "gpu.0.memory.percent": 50.0, "cpu.percent": 5.0})
        live.flush()

    def width(app: TunetrackApp) -> int:
        rows = heatmaps(view(app)).get("GPU utilization", {})
        return len(rows.get("node0 gpu0", []))

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("3")
            sample(3)
            await until(pilot, lambda: width(app) == 3)
            sample(4)
            await until(pilot, lambda: width(app) == 7)
            read = len(reads)
            for step in range(2, 6):  # the run changes, its system samples do not
                live.log({"loss": 1.0 / step}, step=step)
            live.flush()
            await until(pilot, lambda: any(row[2] == "live" and row[4] == "5" for row in cells(app)))
            assert len(reads) == read and width(app) == 7

    try:
        asyncio.run(drive())
    finally:
        live.finish()


def test_a_run_without_gpus_shows_its_host_and_says_so_and_one_without_system_metrics_says_so(
    tmp_path, monkeypatch
):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no GPU library: this machine's CPU alone
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    with Tracker(name="cpu", dir=tmp_path, console=False, system_interval=0.1) as cpu:
        cpu.log({"loss": 1.0}, step=1)
        cpu.flush()
    with Tracker(name="off", dir=tmp_path, console=False, system=False) as off:
        off.log({"loss": 1.0}, step=1)

    async def drive() -> None:
        app = TunetrackApp(dir=tmp_path, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.model.current == off.id)  # the newest first
            await pilot.press("3")
            await until(pilot, lambda: view(app).plain.startswith("no system metrics recorded"))
            await pilot.press("down")
            await until(pilot, lambda: app.model.current == cpu.id)
            await until(pilot, lambda: "no GPU metrics recorded" in view(app).plain)
            lines = view(app).plain.splitlines()
            assert lines[0] == "no GPU metrics recorded"
            assert any(line.startswith("CPU ") and line.endswith(" %") for line in lines), lines

    asyncio.run(drive())
