"""Property tests: whatever a training script logs, default mode never raises and numbers survive."""

from __future__ import annotations

import math
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunetrack import Tracker
from tunetrack.reader import open_run
from tunetrack.store.framing import ScanReport, frame, scan

scalars = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.text(max_size=20),
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=3),
)
metric_dicts = st.recursive(
    st.dictionaries(st.text(min_size=1, max_size=8), scalars, max_size=6),
    lambda children: st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=3),
    max_leaves=12,
)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(rows=st.lists(metric_dicts, min_size=1, max_size=5), config=metric_dicts)
def test_default_mode_never_raises(tmp_path_factory, rows, config):
    root = tmp_path_factory.mktemp("runs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Tracker(dir=root, config=config).start()
        for row in rows:
            t.log(row)
        t.finish()
        run = open_run(t.id, dir=root)
        assert run.state == "finished"
        list(run.rows())
        run.summary()


@SETTINGS
@given(
    values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=50),
    mixed=st.booleans(),
)
def test_floats_round_trip_exactly(tmp_path_factory, values, mixed):
    root = tmp_path_factory.mktemp("runs")
    t = Tracker(dir=root).start()
    for i, v in enumerate(values):
        # ``mixed`` puts a string beside the float, forcing the column-wise encoding path.
        t.log({"v": v, **({"s": "x"} if mixed and i % 2 else {})}, step=i)
    t.finish()
    got = open_run(t.id, dir=root).series("v").values.tolist()
    assert len(got) == len(values)
    for a, b in zip(values, got):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@given(payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=8), cut=st.integers(min_value=1))
def test_framing_survives_any_truncation(payloads, cut):
    data = b"".join(frame(p) for p in payloads)
    cut = cut % len(data)
    report = ScanReport()
    got = list(scan(data[:cut], report))
    assert got == payloads[: len(got)]
    assert report.corrupt == 0


@given(
    payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=8),
    cuts=st.lists(st.integers(min_value=0), max_size=6),
)
def test_framing_read_in_pieces_gives_every_record_once(payloads, cuts):
    """A reader following a growing file scans from where it stopped (``consumed``): whatever sizes the
    file had when it looked, every record comes out exactly once, in order."""
    data = b"".join(frame(p) for p in payloads)
    got, offset = [], 0
    for end in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        if end < offset:
            continue
        report = ScanReport()
        got += list(scan(data[offset:end], report))
        offset += report.consumed
    assert got == payloads


@given(
    payloads=st.lists(st.binary(min_size=1, max_size=300), min_size=3, max_size=8),
    pos=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
)
def test_framing_skips_a_corrupted_byte(payloads, pos, flip):
    frames = [frame(p) for p in payloads]
    data = bytearray(b"".join(frames))
    pos %= len(data)
    data[pos] ^= flip
    got = list(scan(bytes(data)))
    # at most the damaged record is lost; every other record is read intact and in order
    assert len(got) >= len(payloads) - 1
    assert all(p in payloads for p in got)
