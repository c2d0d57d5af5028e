"""The record format: what the payload of every record in a run's data files holds. Records are
encoded and decoded here and nowhere else (``framing.py`` wraps each payload in its checksummed
envelope).

A payload is a msgpack map whose ``k`` field names its kind:

``ROWS`` (``"r"``), a block of logged rows, and ``SYSTEM`` (``"y"``), a block of system-metric rows, in
the same layout:

- ``n``: the number of rows; ``s``: their steps (int64, little-endian bytes); ``t``: their unix
  times (float64 bytes);
- when every row has the same string keys and only float values (what a training loop logs): ``m``,
  the keys, and ``x``, one row-major float64 matrix of ``n × len(m)`` values; ``c`` is then empty;
- otherwise ``c``: ``{key: [column kind, data, rows]}`` with one column per key. The column kind is
  ``"f"`` (float64 bytes), ``"i"`` (int64 bytes), ``"b"`` (one byte per bool) or ``"o"`` (a msgpack
  list of strings, None and mixed values); ``rows`` is None when the column covers every row, else
  the row indices it covers (uint32 bytes).

``CONFIG`` (``"c"``): ``t``, the unix time, and ``config``, the captured config merged into the run's.

``EVENT`` (``"e"``): ``kind`` (checkpoint, rewind, health, text, image, ...), ``step``, ``t`` and
``data``, a JSON-safe dict.

``CONSOLE`` (``"l"``), in a process's console file (``layout.CONSOLE_SUFFIX``), never in its data: a
block of printed lines, ``n`` lines; ``t``, their unix times (float64 bytes); ``o``, the stream of each
(one byte: ``STDOUT``, ``STDERR``, ``BOTH`` for the two through one channel, when they went to the same
terminal or file, or ``NOTE`` for what tunetrack itself says about the capture, such as a cut); ``x``, their texts (a msgpack list of strings). A reader that predates it skips it, as any
kind it does not know.

Reading one metric of a rows block decodes a few large byte strings, not millions of small objects.
NumPy is imported only to decode: a process that only writes never loads it.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

import msgpack

if TYPE_CHECKING:
    import numpy as np

#: The version of this format, recorded in every run's ``run.json``.
FORMAT_VERSION = 1

# -- record kinds (the ``k`` field) --
ROWS = "r"
SYSTEM = "y"
CONFIG = "c"
EVENT = "e"
CONSOLE = "l"

# -- fields of a rows block --
KIND = "k"
COUNT = "n"
STEPS = "s"
TIMES = "t"
MATRIX_KEYS = "m"
MATRIX = "x"
COLUMNS = "c"
# -- fields of a config record (and ``t``) --
CONFIG_DATA = "config"
# -- fields of an event record (and ``t``) --
EVENT_KIND = "kind"
EVENT_STEP = "step"
EVENT_DATA = "data"
# -- fields of a console record (and ``n``, ``t``) --
LINE_STREAMS = "o"
LINE_TEXTS = "x"
#: a console line's stream
NOTE, STDOUT, STDERR, BOTH = 0, 1, 2, 3

# -- column kinds --
FLOAT = "f"
INT = "i"
BOOL = "b"
OBJECT = "o"

_PLAIN = (float, int, bool, str, type(None))
_NUMERIC_DTYPES = {FLOAT: "<f8", INT: "<i8"}


# == encoding ===================================================================================
class Rows:
    """A batch of logged rows, column by column, as the writer takes them off its queue and
    ``encode_rows`` stores them: no per-row tuple is ever built or taken apart."""

    __slots__ = ("all_float", "steps", "times", "values")

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.times: list[float] = []
        self.values: list[dict[Any, Any]] = []
        self.all_float = True  # every value of every row is a float (``Tracker.log`` checked)

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, step: int, unix_time: float, values: dict[Any, Any], all_float: bool = False) -> None:
        self.steps.append(step)
        self.times.append(unix_time)
        self.values.append(values)
        self.all_float = self.all_float and all_float


def _encode_column(
    col: Sequence[Any], convert: Callable[[Any], Any] | None
) -> tuple[str, bytes | list[Any], list[int] | None]:
    """Pick the tightest storage for one column; return the kept positions if any value was dropped."""
    types = set(map(type, col))
    if types == {int}:
        if min(col) >= -(2**63) and max(col) < 2**63:
            return INT, array("q", col).tobytes(), None
    elif types == {float} or (
        types == {float, int} and all(abs(v) <= 2**53 for v in col if type(v) is int)
    ):  # ints beside floats as floats, unless one is too large for a float to hold exactly
        return FLOAT, array("d", col).tobytes(), None
    elif types == {bool}:
        return BOOL, bytes(col), None
    values = list(col) if convert is None else [convert(v) for v in col]
    kept = [i for i, v in enumerate(values) if type(v) in _PLAIN]
    if len(kept) < len(values):
        return OBJECT, [values[i] for i in kept], kept
    return OBJECT, values, None


def encode_rows(
    rows: Rows,
    kind: str = ROWS,
    convert: Callable[[Any], Any] | None = None,
    on_drop: Callable[[str, int], None] | None = None,
    last: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``ROWS`` (or ``SYSTEM``) record for a batch of rows.

    The format holds floats, ints, bools, strings and None. A column holding anything else is passed
    through ``convert`` (the writer's ``values.to_plain``: NumPy scalars and tensor copies become
    numbers); whatever is still not storable is dropped and counted per key through ``on_drop``.
    ``last``, if given, is updated with each key's last stored value.

    The common case (every row has the same string keys and only float values, as a training loop
    logs) is one row-major float64 matrix built in a single C-level pass; anything else is stored
    column by column.
    """
    dicts = rows.values
    n = len(dicts)
    record: dict[str, Any] = {
        KIND: kind,
        COUNT: n,
        STEPS: array("q", rows.steps).tobytes(),
        TIMES: array("d", rows.times).tobytes(),
    }
    first = list(dicts[0])
    uniform = list(chain.from_iterable(dicts)) == first * n
    if uniform and rows.all_float and all(type(k) is str for k in first):
        flat = list(chain.from_iterable(map(dict.values, dicts)))
        if last is not None:
            last.update(dicts[-1])
        return {**record, MATRIX_KEYS: first, MATRIX: struct.pack(f"<{len(flat)}d", *flat), COLUMNS: {}}
    valss: Sequence[Any] = list(map(tuple, map(dict.values, dicts)))
    if uniform:
        groups: dict[tuple, list[int] | None] = {tuple(first): None}
    else:
        groups = {}
        for i, row in enumerate(dicts):
            groups.setdefault(tuple(row), []).append(i)  # type: ignore[union-attr]
    parts: dict[str, list[tuple[list[int] | None, Sequence[Any]]]] = {}
    for keys, idx in groups.items():
        rows_vals = valss if idx is None else [valss[i] for i in idx]
        for key, values in zip(keys, zip(*rows_vals)):
            parts.setdefault(key if type(key) is str else str(key), []).append((idx, values))
    cols: dict[str, list[Any]] = {}
    col: Sequence[Any]
    for key, chunks in parts.items():
        if len(chunks) == 1:
            idx, col = chunks[0]
        else:
            pairs = sorted(
                (i, v) for chunk_idx, chunk_col in chunks for i, v in zip(chunk_idx or range(n), chunk_col)
            )
            idx, col = [i for i, _ in pairs], [v for _, v in pairs]  # back in row (logging) order
        column_kind, data, kept = _encode_column(col, convert)
        if kept is not None:
            if on_drop is not None:
                on_drop(key, len(col) - len(kept))
            idx = [(idx[i] if idx is not None else i) for i in kept]
        if not (column_kind == OBJECT and not data):
            cols[key] = [column_kind, data, None if idx is None else array("I", idx).tobytes()]
            if last is not None:
                last[key] = data[-1] if column_kind == OBJECT else col[-1]
    return {**record, COLUMNS: cols}


def encode_config(unix_time: float, config: dict[str, Any]) -> dict[str, Any]:
    """A ``CONFIG`` record: ``config`` (captured, JSON-safe) merged into the run's at ``unix_time``."""
    return {KIND: CONFIG, TIMES: unix_time, CONFIG_DATA: config}


def encode_event(kind: str, step: int, unix_time: float, data: dict[str, Any]) -> dict[str, Any]:
    """An ``EVENT`` record."""
    return {KIND: EVENT, EVENT_KIND: kind, EVENT_STEP: step, TIMES: unix_time, EVENT_DATA: data}


def encode_console(times: Sequence[float], streams: bytes, texts: list[str]) -> dict[str, Any]:
    """A ``CONSOLE`` record: ``texts[i]`` was printed on stream ``streams[i]`` at ``times[i]``."""
    return {
        KIND: CONSOLE,
        COUNT: len(texts),
        TIMES: array("d", times).tobytes(),
        LINE_STREAMS: streams,
        LINE_TEXTS: texts,
    }


def pack(record: dict[str, Any]) -> bytes:
    """The payload bytes of a record."""
    return msgpack.packb(record, use_bin_type=True)


def float_column(record: dict[str, Any], key: str) -> tuple[Sequence[int], Sequence[float]] | None:
    """(steps, float values) of one numeric key of an encoded rows record, or None; pure Python, for
    the writer's health checks (which must not load NumPy)."""
    steps = array("q")
    steps.frombytes(record[STEPS])
    matrix_keys = record.get(MATRIX_KEYS) or []
    if key in matrix_keys:
        matrix = array("d")
        matrix.frombytes(record[MATRIX])
        return steps, matrix[matrix_keys.index(key) :: len(matrix_keys)]
    col = record[COLUMNS].get(key)
    if col is None or col[0] not in (FLOAT, INT, OBJECT):  # absent, or booleans
        return None
    column_kind, data, idx = col
    if idx is not None:
        rows = array("I")
        rows.frombytes(idx)
        steps = array("q", (steps[i] for i in rows))
    if column_kind == OBJECT:  # mixed: keep the numbers among None and strings
        keep = [i for i, v in enumerate(data) if type(v) in (int, float)]
        return [steps[i] for i in keep], [float(data[i]) for i in keep]
    values = array("d" if column_kind == FLOAT else "q")
    values.frombytes(data)
    return steps, values if column_kind == FLOAT else array("d", values)


def plain_columns(
    record: dict[str, Any],
) -> Iterator[tuple[str, Sequence[int], Sequence[float], Sequence[Any]]]:
    """(key, steps, times, values) of every column of an encoded rows record that is not in its float
    matrix (the writer folds the matrix itself with ``aggregates.MatrixFold``), in pure Python:
    numbers as ``array`` slices, bools and mixed columns as lists."""
    steps = array("q")
    steps.frombytes(record[STEPS])
    times = array("d")
    times.frombytes(record[TIMES])
    for key, (column_kind, data, idx) in record[COLUMNS].items():
        col_steps: Sequence[int] = steps
        col_times: Sequence[float] = times
        if idx is not None:
            rows = array("I")
            rows.frombytes(idx)
            col_steps, col_times = [steps[i] for i in rows], [times[i] for i in rows]
        values: Sequence[Any]
        if column_kind in _NUMERIC_DTYPES:
            values = array("d" if column_kind == FLOAT else "q")
            values.frombytes(data)
        elif column_kind == BOOL:
            values = [bool(b) for b in data]
        else:
            values = data
        yield key, col_steps, col_times, values


# == decoding ===================================================================================
@dataclass
class Block:
    """A decoded rows block. ``visible``: the rows a reader keeps (after rewinds); None keeps all."""

    steps: np.ndarray
    times: np.ndarray
    cols: dict[str, list[Any]]
    matrix_keys: list[str] = field(default_factory=list)
    matrix: bytes = b""
    visible: np.ndarray | None = None

    def keys(self) -> list[str]:
        return [*self.matrix_keys, *self.cols]

    def column(self, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(steps, times, values) of ``key`` in this block, visible rows only."""
        import numpy as np

        if key in self.matrix_keys:
            width = len(self.matrix_keys)
            values = np.frombuffer(self.matrix, dtype=np.float64).reshape(-1, width)[
                :, self.matrix_keys.index(key)
            ]
            idx = None
        elif (col := self.cols.get(key)) is not None:
            column_kind, data, idx = col
            values = _decode_values(column_kind, data)
        else:
            return None
        steps, times = self.steps, self.times
        if idx is not None:
            rows = np.frombuffer(idx, dtype=np.uint32)
            steps, times = steps[rows], times[rows]
            mask = None if self.visible is None else self.visible[rows]
        else:
            mask = self.visible
        if mask is not None and not mask.all():
            steps, times, values = steps[mask], times[mask], values[mask]
        return steps, times, values

    def rows(self) -> list[dict[str, Any]]:
        """One dict per visible row: ``step``, ``time`` and the row's values."""
        import numpy as np

        rows = [{"step": int(s), "time": float(t)} for s, t in zip(self.steps, self.times)]
        if self.matrix_keys:
            matrix = np.frombuffer(self.matrix, dtype=np.float64).reshape(-1, len(self.matrix_keys)).tolist()
            for row, values in zip(rows, matrix):
                row.update(zip(self.matrix_keys, values))
        for key, (column_kind, data, idx) in self.cols.items():
            positions = range(len(rows)) if idx is None else np.frombuffer(idx, dtype=np.uint32).tolist()
            values = data if column_kind == OBJECT else _decode_values(column_kind, data).tolist()
            for pos, value in zip(positions, values):
                rows[pos][key] = value
        if self.visible is not None:
            rows = [r for r, keep in zip(rows, self.visible) if keep]
        return rows


@dataclass
class ConfigRecord:
    time: float
    config: dict[str, Any]


@dataclass
class EventRecord:
    kind: str
    step: int
    time: float
    data: dict[str, Any]


@dataclass
class ConsoleRecord:
    """A block of printed lines: parallel lists of unix times, streams and texts."""

    times: list[float]
    streams: bytes
    texts: list[str]


def _decode_values(column_kind: str, data: Any) -> np.ndarray:
    import numpy as np

    if column_kind in _NUMERIC_DTYPES:
        return np.frombuffer(data, dtype=_NUMERIC_DTYPES[column_kind])
    if column_kind == BOOL:
        return np.frombuffer(data, dtype=np.bool_)
    out = np.empty(len(data), dtype=object)
    out[:] = data
    return out


def unpack(payload: bytes) -> tuple[str, Block | ConfigRecord | EventRecord | ConsoleRecord] | None:
    """``(kind, decoded record)`` of a payload; None for a kind this version does not know (a newer
    writer's), which a reader skips. Raises on a payload that is not a record."""
    import numpy as np

    rec = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    kind = rec[KIND]
    if kind in (ROWS, SYSTEM):
        steps = np.frombuffer(rec[STEPS], dtype=np.int64)
        times = np.frombuffer(rec[TIMES], dtype=np.float64)
        return kind, Block(steps, times, rec[COLUMNS], rec.get(MATRIX_KEYS, []), rec.get(MATRIX, b""))
    if kind == CONFIG:
        return kind, ConfigRecord(rec[TIMES], rec[CONFIG_DATA])
    if kind == EVENT:
        return kind, EventRecord(rec[EVENT_KIND], rec[EVENT_STEP], rec[TIMES], rec.get(EVENT_DATA) or {})
    if kind == CONSOLE:
        line_times = array("d")
        line_times.frombytes(rec[TIMES])
        return kind, ConsoleRecord(line_times.tolist(), rec[LINE_STREAMS], rec[LINE_TEXTS])
    return None


def unpack_all(payloads: Iterator[bytes], on_corrupt: Callable[[], None]) -> Iterator[tuple[str, Any]]:
    """Decode each payload; one that does not decode is reported through ``on_corrupt`` and skipped."""
    for payload in payloads:
        try:
            decoded = unpack(payload)
        except Exception:
            on_corrupt()
            continue
        if decoded is not None:
            yield decoded
