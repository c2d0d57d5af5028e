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

``TABLE`` (``"s"``), one table of samples (generations, GRPO completions) at a step: ``key``,
``step``, ``t``, ``n`` (its rows), ``cols`` (``[[name, column kind], ...]``), ``z0`` and ``zn`` (the ids
of the long strings it defines), ``z`` (whether the body is zlib-compressed) and ``b``, the body: a
msgpack map of ``v`` (one list or byte string per column) and ``d`` (the strings it defines, ids
``z0`` to ``z0 + zn - 1``). A string of ``SHARED_TEXT`` characters or more is stored once per process:
where it first appears it is defined with the next id, afterwards a cell holds that id (the same
prompt at every step costs a few bytes after the first). Column kinds: ``"f"``, ``"i"``, ``"b"`` as in
rows; ``"t"`` text (each cell a string, a string id or None); ``"m"`` chat messages (each cell None or
a list of ``[role, content]`` or ``[role, content, extra]``, the content a string, a string id, or any
plain value); ``"p"`` an image (the path of its PNG inside the run, or None); ``"o"`` anything else
plain (numbers with None, mixed values). A table is a record of its own, not an event, so a reader
indexes the keys and steps of thousands of tables without decompressing them, and readers that do not
know the kind (tunetrack before tables) skip it.

Reading one metric of a rows block decodes a few large byte strings, not millions of small objects.
NumPy is imported only to decode: a process that only writes never loads it.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from array import array
from collections import OrderedDict
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
TABLE = "s"

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
# -- fields of a table record (and ``t``, ``n``) --
TABLE_KEY = "key"
TABLE_STEP = "step"
TABLE_COLUMNS = "cols"
FIRST_STRING = "z0"
STRING_COUNT = "zn"
ZIPPED = "z"
BODY = "b"
BODY_VALUES = "v"
BODY_STRINGS = "d"

# -- column kinds --
FLOAT = "f"
INT = "i"
BOOL = "b"
OBJECT = "o"
# -- table column kinds besides FLOAT, INT, BOOL and OBJECT --
TEXT = "t"
CHAT = "m"
IMAGE = "p"

#: strings this long or longer are stored once per process and then referred to by id
SHARED_TEXT = 64
#: how many long strings the writer remembers (by a 16-byte digest, not their text): a prompt repeated
#: at every step stays known; a string seen again after this many others is stored again
SHARED_MEMORY = 65_536
#: a table body smaller than this is stored as it is; larger ones are compressed when that saves 10%
COMPRESS_FROM = 1024
#: what a cell shows when the record defining its string was lost (a corrupt record was skipped)
MISSING_TEXT = "[text lost: the record holding it is damaged]"

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


class SharedStrings:
    """The writer's side of the strings stored once per process: which long strings this process has
    stored, by digest, and the next id. Ids only grow; a string forgotten (``SHARED_MEMORY``) and seen
    again is simply defined again under a new id."""

    __slots__ = ("_ids", "limit", "next_id")

    def __init__(self, limit: int = SHARED_MEMORY) -> None:
        self._ids: OrderedDict[bytes, int] = OrderedDict()
        self.limit = limit
        self.next_id = 0

    def ref(self, text: str, new: list[str]) -> str | int:
        """``text`` as a cell holds it: short strings as they are, a long one as its id (appended to
        ``new`` when this is its first appearance)."""
        if len(text) < SHARED_TEXT:
            return text
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        known = self._ids.get(digest)
        if known is not None:
            self._ids.move_to_end(digest)
            return known
        new.append(text)
        self._ids[digest] = ref = self.next_id
        self.next_id += 1
        if len(self._ids) > self.limit:
            self._ids.popitem(last=False)
        return ref


def encode_table(
    key: str,
    step: int,
    unix_time: float,
    columns: Sequence[tuple[str, str, list[Any]]],
    shared: SharedStrings,
) -> dict[str, Any]:
    """A ``TABLE`` record of typed columns ``(name, column kind, values)``, as the writer converted them
    (plain values only: numbers, bools, strings, None, and for chat columns lists of message dicts)."""
    first = shared.next_id
    new: list[str] = []
    data: list[Any] = []
    for _, kind, values in columns:
        if kind == FLOAT:
            data.append(array("d", values).tobytes())
        elif kind == INT:
            data.append(array("q", values).tobytes())
        elif kind == BOOL:
            data.append(bytes(values))
        elif kind == TEXT:
            data.append([shared.ref(v, new) if type(v) is str else v for v in values])
        elif kind == CHAT:
            data.append([None if v is None else [_message(m, shared, new) for m in v] for v in values])
        else:
            data.append(list(values))
    body = msgpack.packb({BODY_VALUES: data, BODY_STRINGS: new}, use_bin_type=True)
    zipped = False
    if len(body) >= COMPRESS_FROM:
        compressed = zlib.compress(body, 6)
        if len(compressed) < 0.9 * len(body):
            body, zipped = compressed, True
    return {
        KIND: TABLE,
        TABLE_KEY: key,
        TABLE_STEP: step,
        TIMES: unix_time,
        COUNT: len(columns[0][2]) if columns else 0,
        TABLE_COLUMNS: [[name, kind] for name, kind, _ in columns],
        FIRST_STRING: first,
        STRING_COUNT: len(new),
        ZIPPED: zipped,
        BODY: body,
    }


def _message(message: dict[str, Any], shared: SharedStrings, new: list[str]) -> list[Any]:
    content = message.get("content")
    out = [message.get("role"), shared.ref(content, new) if type(content) is str else content]
    extra = {k: v for k, v in message.items() if k not in ("role", "content")}
    return [*out, extra] if extra else out


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


def matrix_columns(
    record: dict[str, Any],
) -> Iterator[tuple[str, Sequence[int], Sequence[float], Sequence[float]]]:
    """(key, steps, times, values) of each key of an encoded rows record's float matrix, as ``array``
    slices, in pure Python (the writer's fold where NumPy is not loaded)."""
    matrix_keys = record.get(MATRIX_KEYS) or []
    if not matrix_keys:
        return
    steps = array("q")
    steps.frombytes(record[STEPS])
    times = array("d")
    times.frombytes(record[TIMES])
    values = array("d")
    values.frombytes(record[MATRIX])
    for i, key in enumerate(matrix_keys):
        yield key, steps, times, values[i :: len(matrix_keys)]


def plain_columns(
    record: dict[str, Any],
) -> Iterator[tuple[str, Sequence[int], Sequence[float], Sequence[Any]]]:
    """(key, steps, times, values) of every column of an encoded rows record that is not in its float
    matrix (``matrix_columns``), in pure Python: numbers as ``array`` slices, bools and mixed columns
    as lists."""
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


class StringIndex:
    """The reader's side of the strings stored once per process: which table record defines each id.
    A record's body is decompressed only when one of its rows, or one of its strings, is asked for."""

    def __init__(self) -> None:
        self._firsts: list[int] = []
        self._records: list[TableRecord] = []

    def add(self, record: TableRecord) -> None:
        record.strings = self
        if record.defined:
            self._firsts.append(record.first)
            self._records.append(record)

    def get(self, ref: int) -> str:
        import bisect

        i = bisect.bisect_right(self._firsts, ref) - 1
        if i >= 0:
            record = self._records[i]
            defined = record.body()[1]
            if ref - record.first < len(defined):
                return str(defined[ref - record.first])
        return MISSING_TEXT


@dataclass(eq=False)
class TableRecord:
    """A table of samples, its body still encoded: the key, step and columns are read at once (an
    index of thousands of tables costs no decompression), the rows when asked for (``rows()``)."""

    key: str
    step: int
    time: float
    count: int
    columns: list[tuple[str, str]]
    first: int
    defined: int
    zipped: bool
    raw: bytes
    strings: StringIndex | None = None
    _body: tuple[list[Any], list[str]] | None = field(default=None, repr=False)

    def body(self) -> tuple[list[Any], list[str]]:
        """(the columns' data, the strings this record defines), decoded once."""
        if self._body is None:
            data = zlib.decompress(self.raw) if self.zipped else self.raw
            body = msgpack.unpackb(data, raw=False, strict_map_key=False)
            self._body = (body.get(BODY_VALUES) or [], body.get(BODY_STRINGS) or [])
        return self._body

    def rows(self) -> list[dict[str, Any]]:
        """The table's rows, as dicts of plain values (a string id resolved to its text, chat messages as
        ``{"role", "content"}`` dicts, an image as its path inside the run)."""
        data = self.body()[0]
        rows: list[dict[str, Any]] = [{} for _ in range(self.count)]
        for (name, kind), values in zip(self.columns, data):
            for row, value in zip(rows, self._cells(kind, values)):
                row[name] = value
        return rows

    def _cells(self, kind: str, values: Any) -> list[Any]:
        if kind == FLOAT:
            return array("d", values).tolist()
        if kind == INT:
            return array("q", values).tolist()
        if kind == BOOL:
            return [bool(v) for v in values]
        if kind == TEXT:
            return [self._text(v) for v in values]
        if kind == CHAT:
            return [None if v is None else [self._chat_message(m) for m in v] for v in values]
        return list(values)

    def _text(self, value: Any) -> Any:
        if type(value) is int:
            return self.strings.get(value) if self.strings is not None else MISSING_TEXT
        return value

    def _chat_message(self, message: list[Any]) -> dict[str, Any]:
        out = {"role": message[0], "content": self._text(message[1]) if len(message) > 1 else None}
        if len(message) > 2 and isinstance(message[2], dict):
            out.update(message[2])
        return out


def _decode_values(column_kind: str, data: Any) -> np.ndarray:
    import numpy as np

    if column_kind in _NUMERIC_DTYPES:
        return np.frombuffer(data, dtype=_NUMERIC_DTYPES[column_kind])
    if column_kind == BOOL:
        return np.frombuffer(data, dtype=np.bool_)
    out = np.empty(len(data), dtype=object)
    out[:] = data
    return out


def unpack(
    payload: bytes,
) -> tuple[str, Block | ConfigRecord | EventRecord | ConsoleRecord | TableRecord] | None:
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
    if kind == TABLE:
        return kind, TableRecord(
            str(rec[TABLE_KEY]),
            int(rec[TABLE_STEP]),
            float(rec[TIMES]),
            int(rec[COUNT]),
            [(str(name), str(col_kind)) for name, col_kind in rec[TABLE_COLUMNS]],
            int(rec[FIRST_STRING]),
            int(rec[STRING_COUNT]),
            bool(rec[ZIPPED]),
            rec[BODY],
        )
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
