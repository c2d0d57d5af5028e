"""``ROWS`` (``"r"``), a block of logged rows, and ``SYSTEM`` (``"y"``), a block of system-metric rows, in
the same layout:

- ``n``: the number of rows; ``s``: their steps (int64, little-endian bytes); ``t``: their unix
  times (float64 bytes);
- when every row has the same string keys and only float values (what a training loop logs): ``m``,
  the keys, and ``x``, one row-major float64 matrix of ``n × len(m)`` values; ``c`` is then empty.
  From format 2 the writer names a list once per data file: a block then carries ``mi``, the list's
  id, and ``m`` only where it defines the list (``keys``); a reader gives it its names (``resolve``);
- otherwise ``c``: ``{key: [column kind, data, rows]}`` with one column per key. The column kind is
  ``"f"`` (float64 bytes), ``"i"`` (int64 bytes), ``"b"`` (one byte per bool) or ``"o"`` (a msgpack
  list of strings, None and mixed values); ``rows`` is None when the column covers every row, else
  the row indices it covers (uint32 bytes).

Reading one metric of a block decodes a few large byte strings, not millions of small objects. NumPy is
imported only to decode: a process that only writes never loads it (``float_column``,
``matrix_columns`` and ``plain_columns`` read an encoded block in pure Python for the writer).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

from .keys import MATRIX_REF, KeyLists, SharedKeys
from .kinds import BOOL, COUNT, FLOAT, INT, KIND, OBJECT, ROWS, SYSTEM, TIMES

if TYPE_CHECKING:
    import numpy as np

# -- fields of a rows block (and ``k``, ``n``, ``t``) --
STEPS = "s"
MATRIX_KEYS = "m"
MATRIX = "x"
COLUMNS = "c"

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
    shared: SharedKeys | None = None,
) -> dict[str, Any]:
    """One ``ROWS`` (or ``SYSTEM``) record for a batch of rows.

    The format holds floats, ints, bools, strings and None. A column holding anything else is passed
    through ``convert`` (the writer's ``values.to_plain``: NumPy scalars and tensor copies become
    numbers); whatever is still not storable is dropped and counted per key through ``on_drop``.
    ``last``, if given, is updated with each key's last stored value. ``shared``: the data file's key
    lists (format 2): a float matrix then names its keys by their list's id (``keys``), defining the
    list where the file has not (or not lately), and ``matrix_keys`` gives them back to the writer.

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
        record[MATRIX] = struct.pack(f"<{len(flat)}d", *flat)
        record[COLUMNS] = {}
        if shared is None:
            record[MATRIX_KEYS] = first
        else:
            record[MATRIX_REF], define = shared.ref(first, len(flat) + 2 * n)  # with steps and times
            if define:
                record[MATRIX_KEYS] = first
        return record
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


def matrix_keys(record: dict[str, Any], shared: SharedKeys | None = None) -> list[str]:
    """The keys of an encoded rows record's float matrix (none: ``[]``), named in it or, where it
    refers to a list, by the writer's ``shared`` lists."""
    keys = record.get(MATRIX_KEYS)
    if keys is None and shared is not None and MATRIX_REF in record:
        keys = shared.names(record[MATRIX_REF])
    return keys or []


def float_column(
    record: dict[str, Any], key: str, keys: list[str] | None = None
) -> tuple[Sequence[int], Sequence[float]] | None:
    """(steps, float values) of one numeric key of an encoded rows record, or None; pure Python, for
    the writer's health checks (which must not load NumPy). ``keys``: its matrix's (``matrix_keys``),
    where the record refers to them."""
    steps = array("q")
    steps.frombytes(record[STEPS])
    matrix_keys = keys if keys is not None else record.get(MATRIX_KEYS) or []
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
    record: dict[str, Any], keys: list[str] | None = None
) -> Iterator[tuple[str, Sequence[int], Sequence[float], Sequence[float]]]:
    """(key, steps, times, values) of each key of an encoded rows record's float matrix (``keys``, where
    the record refers to them), as ``array`` slices, in pure Python (the writer's fold where NumPy is
    not loaded)."""
    matrix_keys = keys if keys is not None else record.get(MATRIX_KEYS) or []
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
    """A decoded rows block. ``visible``: the rows a reader keeps (after rewinds); None keeps all.
    ``matrix_ref``: the id of the key list it refers to (format 2), its names given by ``resolve``."""

    steps: np.ndarray
    times: np.ndarray
    cols: dict[str, list[Any]]
    matrix_keys: list[str] = field(default_factory=list)
    matrix: bytes = b""
    visible: np.ndarray | None = None
    matrix_ref: int | None = None
    #: each matrix key's column (made when first asked: a row of 10,000 keys is not searched per key)
    _columns: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def keys(self) -> list[str]:
        return [*self.matrix_keys, *self.cols]

    def column(self, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(steps, times, values) of ``key`` in this block, visible rows only."""
        import numpy as np

        if self._columns is None:
            self._columns = {k: i for i, k in enumerate(self.matrix_keys)}
        if (at := self._columns.get(key)) is not None:
            width = len(self.matrix_keys)
            values = np.frombuffer(self.matrix, dtype=np.float64).reshape(-1, width)[:, at]
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


def _decode_values(column_kind: str, data: Any) -> np.ndarray:
    import numpy as np

    if column_kind in _NUMERIC_DTYPES:
        return np.frombuffer(data, dtype=_NUMERIC_DTYPES[column_kind])
    if column_kind == BOOL:
        return np.frombuffer(data, dtype=np.bool_)
    out = np.empty(len(data), dtype=object)
    out[:] = data
    return out


def decode(rec: dict[str, Any]) -> Block:
    """The ``Block`` of an unpacked rows (or system) record."""
    import numpy as np

    steps = np.frombuffer(rec[STEPS], dtype=np.int64)
    times = np.frombuffer(rec[TIMES], dtype=np.float64)
    keys = rec.get(MATRIX_KEYS, [])
    return Block(steps, times, rec[COLUMNS], keys, rec.get(MATRIX, b""), matrix_ref=rec.get(MATRIX_REF))


def resolve(block: Block, lists: KeyLists) -> bool:
    """Give a block that refers to a key list its names, from the lists its data file defined
    (``lists``: the definitions met so far, the block's own among them once ``define`` took it; a
    reader takes every definition of what it read before resolving, so a block after a damaged
    definition finds the next one). False where the list is unknown, or the names the block carries
    are not the list its id names: such a block must never be read (with another list's names)."""
    if block.matrix_ref is None:
        return True
    found = lists.get(block.matrix_ref)
    if found is None or (
        block.matrix_keys and block.matrix_keys is not found[0] and block.matrix_keys != found[0]
    ):
        return False
    block.matrix_keys, block._columns = found
    return True


def define(block: Block, lists: KeyLists) -> None:
    """Take the definition of a key list a block carries, if it does (checked against its id)."""
    if block.matrix_ref is not None and block.matrix_keys:
        lists.define(block.matrix_ref, block.matrix_keys)


def defined_list(rec: dict[str, Any]) -> tuple[Any, Any] | None:
    """``(id, names)`` of the key list an unpacked record defines, or None."""
    if rec.get(KIND) in (ROWS, SYSTEM) and MATRIX_REF in rec and rec.get(MATRIX_KEYS):
        return rec[MATRIX_REF], rec[MATRIX_KEYS]
    return None
