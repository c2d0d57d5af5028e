"""The record format (``store/codec.py``): every record kind encodes and decodes back exactly, the
on-disk field names stay what version 1 wrote, and what cannot be stored is dropped and counted."""

from __future__ import annotations

import math
from array import array

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tunetrack.store import codec
from tunetrack.values import to_plain


def rows_of(*dicts, steps=None, times=None, all_float=None):
    rows = codec.Rows()
    for i, values in enumerate(dicts):
        flag = all(type(v) is float for v in values.values()) if all_float is None else all_float
        rows.add(steps[i] if steps else i + 1, times[i] if times else 1000.0 + i, dict(values), flag)
    return rows


def roundtrip(record):
    kind, decoded = codec.unpack(codec.pack(record))
    assert kind == record[codec.KIND]
    return decoded


def test_a_float_only_block_is_one_matrix_and_reads_back():
    rows = rows_of({"loss": 2.0, "lr": 1e-4}, {"loss": 1.5, "lr": 9e-5}, steps=[10, 20])
    last: dict = {}
    record = codec.encode_rows(rows, last=last)
    assert record[codec.MATRIX_KEYS] == ["loss", "lr"] and record[codec.COLUMNS] == {}
    assert last == {"loss": 1.5, "lr": 9e-5}
    block = roundtrip(record)
    steps, times, values = block.column("lr")
    assert (
        steps.tolist() == [10, 20] and times.tolist() == [1000.0, 1001.0] and values.tolist() == [1e-4, 9e-5]
    )
    assert block.rows() == [
        {"step": 10, "time": 1000.0, "loss": 2.0, "lr": 1e-4},
        {"step": 20, "time": 1001.0, "loss": 1.5, "lr": 9e-5},
    ]


def test_columns_keep_their_types_and_which_rows_they_cover():
    rows = rows_of(
        {"loss": 2.0, "epoch": 1, "done": False, "note": "warmup"},
        {"loss": 1.0, "eval_loss": 3.0},
        {"loss": 0.5, "epoch": 2, "done": True, "note": None},
    )
    record = codec.encode_rows(rows)
    kinds = {key: col[0] for key, col in record[codec.COLUMNS].items()}
    assert kinds == {"loss": "f", "epoch": "i", "done": "b", "note": "o", "eval_loss": "f"}
    block = roundtrip(record)
    assert block.keys() == ["loss", "epoch", "done", "note", "eval_loss"]
    steps, _, values = block.column("epoch")
    assert steps.tolist() == [1, 3] and values.dtype == np.int64 and values.tolist() == [1, 2]
    assert block.column("eval_loss")[0].tolist() == [2]
    assert block.column("missing") is None
    assert block.rows()[1] == {"step": 2, "time": 1001.0, "loss": 1.0, "eval_loss": 3.0}
    assert block.rows()[2]["note"] is None and block.rows()[2]["done"] is True


def test_visibility_hides_rows_from_columns_and_rows():
    block = roundtrip(codec.encode_rows(rows_of({"x": 1.0}, {"x": 2.0}, {"x": 3.0})))
    block.visible = np.array([True, False, True])
    assert block.column("x")[2].tolist() == [1.0, 3.0]
    assert [r["x"] for r in block.rows()] == [1.0, 3.0]


def test_values_the_format_cannot_hold_are_converted_or_dropped_and_counted():
    class Odd:
        pass

    dropped: list = []
    rows = rows_of({"a": np.float32(0.5), "b": Odd(), "big": 2**70}, {"a": 1.0, "b": "ok", "big": 1})
    record = codec.encode_rows(rows, convert=to_plain, on_drop=lambda key, n: dropped.append((key, n)))
    block = roundtrip(record)
    assert block.column("a")[2].tolist() == [0.5, 1.0]
    steps, _, values = block.column("b")
    assert steps.tolist() == [2] and values.tolist() == ["ok"]
    assert block.column("big")[2].tolist() == [float(2**70), 1]  # beyond int64: kept as a float
    assert dropped == [("b", 1)]


def test_system_config_and_event_records():
    system = roundtrip(codec.encode_rows(rows_of({"gpu.0.util": 50.0}), codec.SYSTEM))
    assert system.column("gpu.0.util")[2].tolist() == [50.0]
    config = roundtrip(codec.encode_config(12.5, {"lr": 0.1, "lora": {"r": 16}}))
    assert (config.time, config.config) == (12.5, {"lr": 0.1, "lora": {"r": 16}})
    event = roundtrip(codec.encode_event("checkpoint", 100, 13.0, {"path": "/ckpt"}))
    assert (event.kind, event.step, event.time, event.data) == ("checkpoint", 100, 13.0, {"path": "/ckpt"})


def test_version_1_records_as_written_on_disk_still_decode():
    """The field names are the on-disk format: a payload spelled out by hand, as version 1 writes it
    (version 2 writes the same, except that a float matrix may refer to its keys: test_codec_keys)."""
    assert codec.FORMAT_VERSION == 2
    matrix = {
        "k": "r",
        "n": 2,
        "s": array("q", [1, 2]).tobytes(),
        "t": array("d", [5.0, 6.0]).tobytes(),
        "m": ["loss", "lr"],
        "x": array("d", [0.5, 1e-3, 0.25, 2e-3]).tobytes(),
        "c": {},
    }
    _, block = codec.unpack(msgpack.packb(matrix, use_bin_type=True))
    assert block.matrix_ref is None and codec.resolve(block, codec.KeyLists())  # names its own keys
    assert block.column("lr")[2].tolist() == [1e-3, 2e-3] and block.keys() == ["loss", "lr"]
    rows = {
        "k": "r",
        "n": 2,
        "s": array("q", [1, 2]).tobytes(),
        "t": array("d", [5.0, 6.0]).tobytes(),
        "c": {
            "loss": ["f", array("d", [0.5, 0.25]).tobytes(), None],
            "tag": ["o", ["x"], array("I", [1]).tobytes()],
        },
    }
    kind, block = codec.unpack(msgpack.packb(rows, use_bin_type=True))
    assert kind == "r" and block.column("loss")[2].tolist() == [0.5, 0.25]
    assert block.column("tag")[0].tolist() == [2]
    _, event = codec.unpack(msgpack.packb({"k": "e", "kind": "rewind", "step": 3, "t": 7.0, "data": {}}))
    assert (event.kind, event.step, event.time) == ("rewind", 3, 7.0)
    _, config = codec.unpack(msgpack.packb({"k": "c", "t": 1.0, "config": {"a": 1}}))
    assert config.config == {"a": 1}


def test_unknown_kinds_are_skipped_and_garbage_is_reported():
    assert codec.unpack(msgpack.packb({"k": "z", "future": 1})) is None
    corrupt = []
    good = codec.pack(codec.encode_config(1.0, {}))
    decoded = list(
        codec.unpack_all(iter([b"\xc1not msgpack", good, msgpack.packb([1])]), lambda: corrupt.append(1))
    )
    assert [kind for kind, _ in decoded] == ["c"] and len(corrupt) == 2


def test_float_column_reads_an_encoded_block_without_numpy_types():
    matrix = codec.encode_rows(rows_of({"loss": 1.0, "x": 2.0}, {"loss": 3.0, "x": 4.0}))
    steps, values = codec.float_column(matrix, "loss")
    assert list(steps) == [1, 2] and list(values) == [1.0, 3.0]
    mixed = codec.encode_rows(rows_of({"loss": 1.0}, {"loss": None, "n": 5}, {"loss": 2, "n": 6}))
    steps, values = codec.float_column(mixed, "loss")
    assert list(steps) == [1, 3] and list(values) == [1.0, 2.0]
    assert list(codec.float_column(mixed, "n")[0]) == [2, 3]
    assert codec.float_column(mixed, "absent") is None


finite = st.floats(allow_nan=False)
cells = st.one_of(finite, st.integers(-(2**63), 2**63 - 1), st.booleans(), st.none(), st.text(max_size=5))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from("abcd"), cells, min_size=1, max_size=4), min_size=1, max_size=8)
)
def test_any_batch_of_plain_rows_reads_back_exactly(dicts):
    block = roundtrip(codec.encode_rows(rows_of(*dicts)))
    got = block.rows()
    assert [{k: v for k, v in r.items() if k not in ("step", "time")} for r in got] == [
        {k: v for k, v in d.items()} for d in dicts
    ]
    for r, d in zip(got, dicts):
        for key, value in d.items():
            assert type(r[key]) is type(value) or (type(value) is int and type(r[key]) is float), key


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_survive(value):
    block = roundtrip(codec.encode_rows(rows_of({"x": value})))
    got = block.column("x")[2][0]
    assert (math.isnan(got) and math.isnan(value)) or got == value
