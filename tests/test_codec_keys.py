"""Key lists named once per data file (format 2, ``store/codec/keys.py``): a wide run's blocks refer to
their keys by a checksummed id; whatever is damaged, skipped or read from the middle of a file, a
block is read with its own names or reported as unreadable, never with another list; format-1 runs
read as before, and a run of a newer format says so."""

from __future__ import annotations

import json
import warnings

import msgpack
import pytest

from tunetrack import Tracker
from tunetrack.reader import open_run, records
from tunetrack.reader.series import series as series_of_blocks
from tunetrack.store import codec
from tunetrack.store.codec import keys as key_lists
from tunetrack.store.framing import frame, scan
from tunetrack.store.process_files import ProcessFiles

WIDE = [f"moe/layer{layer}/expert{expert}/load" for layer in range(40) for expert in range(256)]
NARROW = [f"k{i:02d}" for i in range(50)]


def value(step, i):
    """Every value says which key and step it is: a block read with another list's names shows."""
    return float(step * 100_000 + i)


def log_run(root, keys, steps, name, per_block=1, first=1, **kw):
    t = Tracker(dir=root, name=name, system=False, console=False, **kw).start()
    for step in range(first, first + steps):
        t.log({k: value(step, i) for i, k in enumerate(keys)}, step=step)
        if (step - first + 1) % per_block == 0:
            t.flush()
    t.finish()
    return t.id


def payloads(path):
    return [msgpack.unpackb(p, strict_map_key=False) for p in scan(path.read_bytes())]


def rows_records(path):
    return [r for r in payloads(path) if r["k"] == "r"]


def data_files(root, run_id):
    return sorted((root / run_id).glob("*.ttr"))


def assert_right_names(series_of, keys, steps):
    """Every key reads its own values at exactly ``steps``."""
    for i in (0, 1, len(keys) // 2, len(keys) - 1):
        s = series_of(keys[i])
        assert s.steps.tolist() == steps, keys[i]
        assert s.values.tolist() == [value(step, i) for step in steps], keys[i]


def caught_messages(action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = action()
    return out, [str(w.message) for w in caught]


# -- the writer's side -------------------------------------------------------------------------------
def test_a_list_is_defined_once_referred_to_after_and_defined_again_after_enough_values(monkeypatch):
    monkeypatch.setattr(key_lists, "REDEFINE_VALUES", 25)
    shared = codec.SharedKeys()
    first = ["a", "b"]
    got = [shared.ref(list(first), 10) for _ in range(5)]
    ident = codec.list_id(first)
    assert got == [(ident, True), (ident, False), (ident, False), (ident, True), (ident, False)]
    assert shared.ref(["b", "a"], 1) == (codec.list_id(["b", "a"]), True)  # order is part of a list
    assert shared.ref(list(first), 1) == (ident, False)  # a list defined before: referred to again
    shared.forget()
    assert shared.ref(list(first), 1) == (ident, True)


def test_an_encoded_block_refers_and_the_writer_reads_it_back():
    shared = codec.SharedKeys()
    rows = codec.Rows()
    rows.add(1, 10.0, {"loss": 1.0, "lr": 2.0}, True)
    defining = codec.encode_rows(rows, shared=shared)
    referring = codec.encode_rows(rows, shared=shared)
    assert defining[codec.MATRIX_KEYS] == ["loss", "lr"] and defining[codec.MATRIX_REF] == codec.list_id(
        ["loss", "lr"]
    )
    assert codec.MATRIX_KEYS not in referring and referring[codec.MATRIX_REF] == defining[codec.MATRIX_REF]
    keys = codec.matrix_keys(referring, shared)
    assert keys == ["loss", "lr"] and list(codec.float_column(referring, "lr", keys)[1]) == [2.0]
    assert [k for k, *_ in codec.matrix_columns(referring, keys)] == ["loss", "lr"]
    assert codec.MATRIX_REF not in codec.encode_rows(rows)  # no shared lists: format 1's block


def test_a_reader_never_takes_names_that_are_not_the_list_the_id_names():
    lists = codec.KeyLists()
    assert not lists.define(codec.list_id(["a", "b"]), ["a", "c"])
    assert lists.define(codec.list_id(["a", "b"]), ["a", "b"])
    assert not lists.define(codec.list_id(["a", "b"]), ["a", "c"])  # known: the names must match
    rows = codec.Rows()
    rows.add(1, 10.0, {"a": 1.0, "c": 2.0}, True)
    forged = codec.encode_rows(rows, shared=codec.SharedKeys())
    forged[codec.MATRIX_REF] = codec.list_id(["a", "b"])
    _, block = codec.unpack(codec.pack(forged))
    assert not codec.resolve(block, lists)


# -- reading a run -----------------------------------------------------------------------------------
def test_a_wide_run_names_its_keys_once_and_reads_back_exactly(root):
    run_id = log_run(root, WIDE, 24, "wide", per_block=4)
    (data,) = data_files(root, run_id)
    blocks = rows_records(data)
    assert len(blocks) >= 4 and [codec.MATRIX_KEYS in b for b in blocks] == [True] + [False] * (
        len(blocks) - 1
    )
    assert len({b[codec.MATRIX_REF] for b in blocks}) == 1
    names = len(msgpack.packb(WIDE))
    assert data.stat().st_size < 24 * len(WIDE) * 8 + 1.5 * names  # the names once, not once a block
    assert json.loads((root / run_id / "run.json").read_text())["format"] == codec.FORMAT_VERSION == 2
    run = open_run(run_id, dir=root)
    assert run.keys() == WIDE
    assert_right_names(run.series, WIDE, list(range(1, 25)))
    assert list(run.rows())[5][WIDE[4242]] == value(6, 4242)


def test_a_corrupt_block_between_two_blocks_costs_that_block_only(root):
    run_id = log_run(root, NARROW, 6, "rot")
    (data,) = data_files(root, run_id)
    raw = bytearray(data.read_bytes())
    starts = [i for i in range(len(raw)) if raw.startswith(b"\xa1k\xa1r", i)]
    raw[starts[2] + 40] ^= 0xFF  # the third block: one that refers to the list
    data.write_bytes(bytes(raw))
    run, messages = caught_messages(lambda: open_run(run_id, dir=root))
    _, messages = caught_messages(lambda: assert_right_names(run.series, NARROW, [1, 2, 4, 5, 6]))
    assert any("1 corrupt record" in m for m in messages)


def test_a_damaged_definition_loses_the_blocks_up_to_the_next_one_and_never_misnames(root, monkeypatch):
    monkeypatch.setattr(key_lists, "REDEFINE_VALUES", 3 * len(NARROW))  # defined again every 3 blocks
    run_id = log_run(root, NARROW, 9, "redefined")
    (data,) = data_files(root, run_id)
    assert [codec.MATRIX_KEYS in b for b in rows_records(data)] == [True, False, False] * 3
    raw = bytearray(data.read_bytes())
    first = raw.find(b"\xa1m\xdc")  # inside the first definition's names
    raw[first + 10] ^= 0xFF
    data.write_bytes(bytes(raw))
    run = open_run(run_id, dir=root)
    _, messages = caught_messages(lambda: assert_right_names(run.series, NARROW, [2, 3, 4, 5, 6, 7, 8, 9]))
    assert any("corrupt" in m for m in messages)  # blocks 2 and 3 found the next definition


def test_blocks_whose_list_is_nowhere_are_reported_and_skipped(root, monkeypatch):
    run_id = log_run(root, NARROW, 4, "lost")
    (data,) = data_files(root, run_id)
    kept = [p for p in scan(data.read_bytes()) if codec.MATRIX_KEYS.encode() + b"\xdc" not in p]
    data.write_bytes(b"".join(frame(p) for p in kept))  # the defining block is gone
    run = open_run(run_id, dir=root)
    series, messages = caught_messages(lambda: run.series(NARROW[3], strict=False))
    assert len(series) == 0
    assert any("3 block(s) of rows whose list of keys was not found" in m for m in messages)


def test_a_tail_read_from_the_middle_of_a_file_finds_the_list_before_it(root, monkeypatch):
    monkeypatch.setattr(records, "LOOK_BACK", 700)  # small windows: widened until the definition is met
    run_id = log_run(root, NARROW, 30, "tail")
    run = open_run(run_id, dir=root)
    proc = run.processes[0].name
    size = run.folder.data_size(proc)
    for start in (size // 3, size * 2 // 3, size - 500):
        tail = records.read_process(run.folder, proc, True, start, mid_record=True)
        steps = [int(s) for b in tail.blocks for s in b.steps]
        assert steps and steps == list(range(steps[0], 31))
        assert_right_names(lambda k: series_of_blocks(tail.blocks, k), NARROW, steps)  # noqa: B023


def test_following_a_live_wide_run_keeps_the_lists_and_never_looks_back(root, monkeypatch):
    def no_look_back(*args):
        raise AssertionError("an incremental read looked back")

    monkeypatch.setattr(records, "_look_back", no_look_back)
    t = Tracker(dir=root, name="live", system=False, console=False).start()
    followed = None
    for step in range(1, 13):
        t.log({k: value(step, i) for i, k in enumerate(WIDE)}, step=step)
        if step % 3 == 0:
            t.flush()
            followed = followed or open_run(t.id, dir=root)
            followed.refresh()
            assert_right_names(followed.series, WIDE, list(range(1, step + 1)))
    t.finish()


def test_a_resumed_run_defines_its_lists_again_in_its_own_file(root):
    run_id = log_run(root, NARROW, 5, "resumed", per_block=2)
    log_run(root, NARROW, 5, "resumed", per_block=2, first=6, resume=run_id)
    files = data_files(root, run_id)
    assert len(files) == 2
    for data in files:
        assert codec.MATRIX_KEYS in rows_records(data)[0]
        assert codec.MATRIX_KEYS not in rows_records(data)[1]
    run = open_run(run_id, dir=root)
    assert_right_names(run.series, NARROW, list(range(1, 11)))
    assert [len(s) for s in run.process_series(NARROW[0]).values()] == [5, 5]


def test_a_failed_write_makes_the_writer_define_the_list_again(root, monkeypatch):
    t = Tracker(dir=root, name="full", system=False, console=False).start()
    original = ProcessFiles.append

    def no_space(self, payload):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ProcessFiles, "append", no_space)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        t.log({k: value(1, i) for i, k in enumerate(NARROW)}, step=1)
        t.flush()  # the defining block is lost
        monkeypatch.setattr(ProcessFiles, "append", original)
        for step in (2, 3):
            t.log({k: value(step, i) for i, k in enumerate(NARROW)}, step=step)
            t.flush()
        t.finish()  # says a row was lost
    assert_right_names(open_run(t.id, dir=root).series, NARROW, [2, 3])


# -- versions ----------------------------------------------------------------------------------------
def as_format_1(root, run_id):
    """Rewrite a run as tunetrack's format 1 wrote it: ``format`` 1, every block naming its keys."""
    meta = root / run_id / "run.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": 1}))
    for data in data_files(root, run_id):
        out = []
        for payload in scan(data.read_bytes()):
            rec = msgpack.unpackb(payload, strict_map_key=False)
            if codec.MATRIX_REF in rec:
                names = rec.pop(codec.MATRIX_KEYS, None)
                rec[codec.MATRIX_KEYS] = names if names is not None else NARROW
                del rec[codec.MATRIX_REF]
            out.append(frame(codec.pack(rec)))
        data.write_bytes(b"".join(out))


def test_format_1_runs_read_as_before_and_a_resume_keeps_writing_format_1(root):
    run_id = log_run(root, NARROW, 4, "old")
    as_format_1(root, run_id)
    (data,) = data_files(root, run_id)
    assert all(codec.MATRIX_KEYS in b and codec.MATRIX_REF not in b for b in rows_records(data))
    _, messages = caught_messages(
        lambda: assert_right_names(open_run(run_id, dir=root).series, NARROW, [1, 2, 3, 4])
    )
    assert messages == []
    log_run(root, NARROW, 3, "old", first=5, resume=run_id)  # a newer tunetrack resumes it
    for data in data_files(root, run_id):  # still all format 1: a format-1 reader reads all of it
        assert all(codec.MATRIX_KEYS in b and codec.MATRIX_REF not in b for b in rows_records(data))
    assert json.loads((root / run_id / "run.json").read_text())["format"] == 1
    assert_right_names(open_run(run_id, dir=root).series, NARROW, list(range(1, 8)))


def test_a_run_of_a_newer_format_says_so_once_and_shows_what_it_can(root):
    run_id = log_run(root, NARROW, 3, "future")
    meta = root / run_id / "run.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": codec.FORMAT_VERSION + 1}))
    (data,) = data_files(root, run_id)
    rec = rows_records(data)[-1]
    rec[codec.MATRIX_REF] = 12345  # a block naming a list this reader cannot know
    rec.pop(codec.MATRIX_KEYS, None)
    with data.open("ab") as f:
        f.write(frame(codec.pack(rec)))
    run = open_run(run_id, dir=root)
    series, messages = caught_messages(lambda: run.series(NARROW[1]))
    assert series.steps.tolist() == [1, 2, 3]
    newer = [m for m in messages if "newer tunetrack" in m]
    assert len(newer) == 1 and "upgrade tunetrack" in newer[0] and run_id in newer[0]
    assert "\n" not in newer[0]
    _, again = caught_messages(lambda: open_run(run_id, dir=root).series(NARROW[1]))
    assert not [m for m in again if "newer tunetrack" in m]  # once per run


@pytest.mark.parametrize("written", [None, 1, 2, "3", True])
def test_a_run_of_a_known_or_unreadable_format_says_nothing(written):
    assert not records.newer("r", {} if written is None else {"format": written})
