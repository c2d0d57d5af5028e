"""The console backend: exact lines, key order and labels, number formats, keys=/every=, and a real run."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from tunetrack.backends import Backend, ConsoleBackend, RunInfo
from tunetrack.backends.stdout import format_value

WHEN = 1767348000.0  # 2026-01-02 10:00:00 UTC
STAMP = "[2026-01-02 10:00:00]"


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def printed(console: ConsoleBackend, *rows: dict, system: dict | None = None) -> list[str]:
    if system is not None:
        console.log_system([(0, WHEN, system)])
    console.log([(100 + i, WHEN, row) for i, row in enumerate(rows)])
    return console.stream.getvalue().splitlines()


def test_the_documented_line():
    console = ConsoleBackend(stream=io.StringIO())
    lines = printed(
        console,
        {"lr": 2e-4, "loss": 2.15},
        system={"gpu.0.memory.used_bytes": 8.2e9, "gpu.1.memory.used_bytes": 1.5e9, "cpu.percent": 5.0},
    )
    assert lines == [f"{STAMP} step 100 | loss 2.150 | lr 2.0e-04 | gpu mem 8.2 GB"]  # the fullest GPU


def test_well_known_keys_first_with_short_labels_then_the_rest_in_logged_order():
    row = {
        "tokens_per_second": 12345.6,
        "epoch": 1.5,
        "grad_norm": 0.8123,
        "note": "warmup done",
        "learning_rate": 1.9876e-4,
        "eval_loss": 2.0,
        "loss": 2.1,
        "missing": None,
    }
    assert printed(ConsoleBackend(stream=io.StringIO()), row) == [
        f"{STAMP} step 100 | loss 2.100 | eval_loss 2.000 | lr 1.988e-04 | grad 0.8123 | epoch 1.500 | "
        "tokens_per_second 12346 | note 'warmup done' | missing None"
    ]
    both = printed(ConsoleBackend(stream=io.StringIO()), {"lr": 1.0, "learning_rate": 3e-5})
    assert both == [f"{STAMP} step 100 | lr 3.0e-05"]  # one "lr": learning_rate wins


@pytest.mark.parametrize(
    "value, text",
    [
        (2.15, "2.150"),
        (0.5, "0.5000"),
        (-2.15, "-2.150"),
        (12.3456, "12.35"),
        (0.0, "0.000"),
        (0.001, "0.001000"),
        (999.96, "1000"),
        (1234.4, "1234"),
        (99999.4, "99999"),
        (2e-4, "2.0e-04"),
        (1.9876e-4, "1.988e-04"),
        (0.00099996, "1.0e-03"),
        (1e-12, "1.0e-12"),
        (123456.0, "1.235e+05"),
        (-3e7, "-3.0e+07"),
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (float("-inf"), "-inf"),
        (7, "7"),
        (123456789, "123456789"),  # integers stay exact
        (True, "True"),
        (None, "None"),
        ("warmup", "'warmup'"),
        ("x" * 40, "'" + "x" * 27 + "...'"),
        ("two\nlines", "'two\\nlines'"),  # one row, one line
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_numpy_scalars_format_like_python_numbers():
    import numpy as np

    assert format_value(np.float32(0.25)) == "0.2500"
    assert format_value(np.int64(3)) == "3"
    assert format_value(np.bool_(True)) == "True"


def test_memory_in_bytes_is_shown_in_gb():
    row = {
        "gpu.0.memory.allocated_bytes": 8_200_000_000,
        "gpu_mem": 12.5e9,
        "cache_bytes": 52_428_800,
        "peak_memory_alloc": 8.2,  # torchtune: already GiB
        "mem.percent": 45.0,
    }
    assert printed(ConsoleBackend(stream=io.StringIO()), row) == [
        f"{STAMP} step 100 | gpu.0.memory.allocated 8.2 GB | gpu_mem 12.5 GB | cache 52 MB | "
        "peak_memory_alloc 8.200 | mem.percent 45.00"
    ]


def test_keys_restrict_and_order_and_every_prints_every_nth_row():
    console = ConsoleBackend(
        stream=io.StringIO(), keys=["learning_rate", "loss", "absent", "gpu_mem"], every=3
    )
    rows = [{"loss": float(i), "learning_rate": 1e-4, "other": 1} for i in range(7)]
    lines = printed(console, *rows, system={"gpu.0.memory.used_bytes": 1e9})
    assert lines == [
        f"{STAMP} step 100 | lr 1.0e-04 | loss 0.000 | gpu mem 1.0 GB",
        f"{STAMP} step 103 | lr 1.0e-04 | loss 3.000 | gpu mem 1.0 GB",
        f"{STAMP} step 106 | lr 1.0e-04 | loss 6.000 | gpu mem 1.0 GB",
    ]
    console.log([(step, WHEN, {"loss": 1.0}) for step in (107, 108, 109)])  # the count spans batches
    assert console.stream.getvalue().splitlines()[3:] == [f"{STAMP} step 109 | loss 1.000 | gpu mem 1.0 GB"]
    assert printed(ConsoleBackend(stream=io.StringIO(), keys=[]), {"loss": 1.0}) == [f"{STAMP} step 100"]
    assert len(printed(ConsoleBackend(stream=io.StringIO(), every=0), {}, {})) == 2  # every < 1 means 1


def test_timestamps_are_local_time(monkeypatch):
    monkeypatch.setenv("TZ", "JST-9")  # POSIX form: UTC+9, no tz database needed
    time.tzset()
    assert printed(ConsoleBackend(stream=io.StringIO()), {"loss": 1.0}) == [
        "[2026-01-02 19:00:00] step 100 | loss 1.000"
    ]


def test_start_and_finish_lines():
    console = ConsoleBackend(stream=io.StringIO())
    console.start(RunInfo("k3x9ab", "sft-1", "llama", ["a"], Path("/runs/k3x9ab"), False))
    console.log([(199, WHEN, {"loss": 1.0}), (200, WHEN, {"loss": 0.9})])
    console.finish("finished")
    lines = console.stream.getvalue().splitlines()
    assert lines[0] == "tunetrack: started run sft-1 (k3x9ab) in /runs/k3x9ab"
    assert lines[-1] == "tunetrack: run sft-1 (k3x9ab) finished at step 200"

    quiet = ConsoleBackend(stream=io.StringIO())
    quiet.start(RunInfo("k3x9ab", "k3x9ab", None, [], None, True))
    quiet.finish("failed")
    assert quiet.stream.getvalue().splitlines() == [
        "tunetrack: resumed run k3x9ab",
        "tunetrack: run k3x9ab failed",
    ]


def test_default_stream_is_stdout_looked_up_at_write_time(capsys):
    console = ConsoleBackend()  # built before pytest swaps sys.stdout would still follow it
    console.log([(1, WHEN, {"loss": 1.0})])
    out, err = capsys.readouterr()
    assert out == f"{STAMP} step 1 | loss 1.000\n" and err == ""


def test_a_stream_that_cannot_encode_a_string_gets_escapes_not_an_exception():
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    ConsoleBackend(stream=stream).log([(1, WHEN, {"note": "naïve ✓"})])
    assert raw.getvalue().decode() == f"{STAMP} step 1 | note 'na\\xefve \\u2713'\n"


def test_protocol_fits_without_inheritance():
    class Mine:  # a user's backend: no tunetrack import needed
        def start(self, run): ...
        def log_config(self, config): ...
        def log(self, rows): ...
        def finish(self, state): ...

    class Incomplete:
        def log(self, rows): ...

    assert isinstance(ConsoleBackend(), Backend) and isinstance(Mine(), Backend)
    assert not isinstance(Incomplete(), Backend)


def test_through_a_real_tracker(tmp_path):
    from tunetrack import Tracker

    stream = io.StringIO()
    with Tracker(dir=tmp_path, name="demo", backends=[ConsoleBackend(stream=stream)], system=False) as t:
        for step in (1, 2):
            t.log({"loss": 3.0 / step, "learning_rate": 2e-4}, step=step)
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"tunetrack: started run demo ({t.id}) in {tmp_path / t.id}"
    assert [line.split("] ", 1)[1] for line in lines[1:3]] == [
        "step 1 | loss 3.000 | lr 2.0e-04",
        "step 2 | loss 1.500 | lr 2.0e-04",
    ]
    assert lines[-1] == f"tunetrack: run demo ({t.id}) finished at step 2"
