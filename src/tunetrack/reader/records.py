"""Turn one process's data file into decoded blocks, skipping (and reporting) damaged records."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from .._warnings import warn_once
from ..store.framing import ScanReport, scan

_NUMERIC = {"f": np.float64, "i": np.int64}


@dataclass
class Block:
    """One ``r`` record: the rows of one write, with the visibility mask the rewinds leave."""

    steps: np.ndarray
    times: np.ndarray
    cols: dict[str, list[Any]]
    visible: np.ndarray | None = None

    matrix_keys: list[str] = field(default_factory=list)
    matrix: bytes = b""

    def keys(self) -> list[str]:
        return [*self.matrix_keys, *self.cols]

    def column(self, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(steps, times, values) of ``key`` in this block, visible rows only."""
        if key in self.matrix_keys:
            width = len(self.matrix_keys)
            values = np.frombuffer(self.matrix, dtype=np.float64).reshape(-1, width)[
                :, self.matrix_keys.index(key)
            ]
            kind, idx = "f", None
        elif (col := self.cols.get(key)) is not None:
            kind, data, idx = col
            values = decode_values(kind, data)
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


def decode_values(kind: str, data: Any) -> np.ndarray:
    if kind in _NUMERIC:
        return np.frombuffer(data, dtype=_NUMERIC[kind])
    if kind == "b":
        return np.frombuffer(data, dtype=np.bool_)
    out = np.empty(len(data), dtype=object)
    out[:] = data
    return out


@dataclass
class ProcessRecords:
    blocks: list[Block] = field(default_factory=list)
    system: list[Block] = field(default_factory=list)
    configs: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    #: bytes of the file decoded so far: a later read of the growing file starts here
    offset: int = 0

    def extend(self, more: ProcessRecords) -> None:
        self.blocks += more.blocks
        self.system += more.system
        self.configs += more.configs
        self.events += more.events
        self.offset = more.offset


def read_process(path: Path, ended: bool, start: int = 0) -> ProcessRecords:
    """Decode every intact record of ``path`` from byte ``start`` (where an earlier read stopped).
    A torn tail is normal while the writer is alive, so it is reported only for a process that has
    ended; corruption is always reported."""
    out = ProcessRecords(offset=start)
    try:
        with open(path, "rb") as f:
            f.seek(start)
            buf = f.read()
    except OSError:
        return out
    report = ScanReport()
    for payload in scan(buf, report):
        try:
            rec = msgpack.unpackb(payload, raw=False, strict_map_key=False)
            kind = rec["k"]
        except Exception:
            report.corrupt += 1
            continue
        if kind in ("r", "y"):
            steps = np.frombuffer(rec["s"], dtype=np.int64)
            times = np.frombuffer(rec["t"], dtype=np.float64)
            block = Block(steps, times, rec["c"], None, rec.get("m", []), rec.get("x", b""))
            (out.blocks if kind == "r" else out.system).append(block)
        elif kind == "c":
            out.configs.append((rec["t"], rec["config"]))
        elif kind == "e":
            out.events.append(rec)
    out.offset = start + report.consumed
    if report.corrupt or (report.torn_tail and ended):
        what = f"{report.corrupt} corrupt record(s)" if report.corrupt else "a torn last record"
        warn_once(
            f"scan:{path}:{start}:{len(buf)}",
            f"{path}: skipped {what} ({report.skipped_bytes} bytes); everything else was read",
        )
    return out
