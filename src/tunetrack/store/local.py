"""The embedded default backend: append this process's records to its own file in the run folder.

Rows are stored column-wise, one block per write: steps (int64), times (float64), and for each key a
typed column (``f`` float64, ``i`` int64, ``b`` bool, ``o`` a msgpack list for strings, None and
mixed values) with the row indices it covers when it does not cover every row. Reading one metric
then decodes a few large byte strings instead of millions of small objects.
"""

from __future__ import annotations

import os
import struct
import time
from array import array
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import msgpack

from .._values import DROP, to_python
from . import layout
from .framing import frame


class Rows:
    """A batch of logged rows, column by column, as the writer takes them off the queue and
    ``encode_rows`` stores them: no per-row tuple is ever built or taken apart."""

    __slots__ = ("plain", "steps", "times", "values")

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.times: list[float] = []
        self.values: list[dict[Any, Any]] = []
        self.plain = True  # every value of every row is a float (Tracker.log checked)

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, step: int, unix_time: float, values: dict[Any, Any], plain: bool = False) -> None:
        self.steps.append(step)
        self.times.append(unix_time)
        self.values.append(values)
        self.plain = self.plain and plain


def _encode_column(col: Sequence[Any]) -> tuple[str, bytes | list[Any], list[int] | None]:
    """Pick the tightest storage for one column; return the kept positions if any value was dropped."""
    types = set(map(type, col))
    if types == {int}:
        if min(col) >= -(2**63) and max(col) < 2**63:
            return "i", array("q", col).tobytes(), None
    elif types <= {float, int}:
        return "f", array("d", col).tobytes(), None
    elif types == {bool}:
        return "b", bytes(col), None
    values = [to_python(v) for v in col]
    if any(v is DROP for v in values):
        kept = [i for i, v in enumerate(values) if v is not DROP]
        return "o", [values[i] for i in kept], kept
    return "o", values, None


def encode_rows(rows: Rows, on_drop: Any = None, last: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ``r`` record for a batch of rows.

    The common case (every row has the same string keys and only float values, as a training loop
    logs) is one row-major float64 matrix built in a single C-level pass; anything else is stored
    column by column.
    """
    dicts = rows.values
    n = len(dicts)
    record: dict[str, Any] = {
        "k": "r",
        "n": n,
        "s": array("q", rows.steps).tobytes(),
        "t": array("d", rows.times).tobytes(),
    }
    first = list(dicts[0])
    uniform = list(chain.from_iterable(dicts)) == first * n
    if uniform and rows.plain and all(type(k) is str for k in first):
        flat = list(chain.from_iterable(map(dict.values, dicts)))
        if last is not None:
            last.update(dicts[-1])
        return {**record, "m": first, "x": struct.pack(f"<{len(flat)}d", *flat), "c": {}}
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
        kind, data, kept = _encode_column(col)
        if kept is not None:
            if on_drop is not None:
                on_drop(key, len(col) - len(kept))
            idx = [(idx[i] if idx is not None else i) for i in kept]
        if not (kind == "o" and not data):
            cols[key] = [kind, data, None if idx is None else array("I", idx).tobytes()]
            if last is not None:
                last[key] = data[-1] if kind == "o" else col[-1]
    return {**record, "c": cols}


class LocalStore:
    """Writes one process's files. Called only from the writer thread."""

    def __init__(self, run_dir: Path, proc: str) -> None:
        self.run_dir = run_dir
        self.data_path = run_dir / f"{proc}{layout.DATA_SUFFIX}"
        self.proc_path = run_dir / f"{proc}{layout.PROC_SUFFIX}"
        self.end_path = run_dir / f"{proc}{layout.END_SUFFIX}"
        self._file: Any = None
        self._dirty = False

    def open(self, proc_meta: dict[str, Any]) -> None:
        layout.write_json_atomic(self.proc_path, proc_meta)
        self._file = open(self.data_path, "ab", buffering=1 << 20)  # noqa: SIM115 - open for the run

    def append(self, record: dict[str, Any]) -> None:
        self._file.write(frame(msgpack.packb(record, use_bin_type=True)))
        self._dirty = True

    def flush(self, fsync: bool = False) -> None:
        if self._dirty:
            self._file.flush()
            self._dirty = False
        if fsync:
            os.fsync(self._file.fileno())

    def heartbeat(self) -> None:
        """Readers call a run crashed when this file's mtime goes stale, so touch it while alive."""
        os.utime(self.data_path)

    def close(self, end: dict[str, Any]) -> None:
        try:
            if self._file is not None:
                self.flush(fsync=True)
                self._file.close()
        finally:
            self._file = None
            layout.write_json_atomic(self.end_path, {**end, "time": end.get("time", time.time())})
