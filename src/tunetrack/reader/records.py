"""One writing process's records, decoded from its data (``store.codec``), or from its console file,
incrementally: a later read of a growing file decodes only what was appended since."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._warnings import warn_once
from ..store import codec, layout
from ..store.base import RunFolder
from ..store.framing import ScanReport, first_record, scan


@dataclass
class ProcessRecords:
    blocks: list[codec.Block] = field(default_factory=list)
    system: list[codec.Block] = field(default_factory=list)
    configs: list[codec.ConfigRecord] = field(default_factory=list)
    events: list[codec.EventRecord] = field(default_factory=list)
    console: list[codec.ConsoleRecord] = field(default_factory=list)
    tables: list[codec.TableRecord] = field(default_factory=list)
    #: the long strings this process's tables define (ids are per process; a table's cells refer to
    #: strings defined by earlier tables of the same process)
    strings: codec.StringIndex = field(default_factory=codec.StringIndex)
    #: bytes of the data decoded so far: a later read of the growing data starts here
    offset: int = 0

    def extend(self, more: ProcessRecords) -> None:
        self.blocks += more.blocks
        self.system += more.system
        self.configs += more.configs
        self.events += more.events
        self.console += more.console
        for table in more.tables:
            self.strings.add(table)
        self.tables += more.tables
        self.offset = more.offset


def read_process(
    folder: RunFolder,
    proc: str,
    ended: bool,
    start: int = 0,
    suffix: str = layout.DATA_SUFFIX,
    mid_record: bool = False,
) -> ProcessRecords:
    """Decode every intact record of ``proc``'s data (``suffix``: of its console file) from byte
    ``start`` (where an earlier read stopped; ``mid_record``: any byte, such as the start of a file's
    last kilobytes, and what comes before the first whole record is passed by). A torn tail is normal
    while the writer is alive, so it is reported only for a process that has ended; corruption is
    always reported."""
    buf = folder.read_data(proc, start, suffix)
    if mid_record:
        skip = first_record(buf)
        buf, start = buf[skip:], start + skip
    out = ProcessRecords(offset=start)
    report = ScanReport()

    def corrupt() -> None:
        report.corrupt += 1

    by_kind: dict[str, list[Any]] = {
        codec.ROWS: out.blocks,
        codec.SYSTEM: out.system,
        codec.CONFIG: out.configs,
        codec.EVENT: out.events,
        codec.CONSOLE: out.console,
        codec.TABLE: out.tables,
    }
    for kind, record in codec.unpack_all(scan(buf, report), corrupt):
        by_kind[kind].append(record)
    for table in out.tables:
        out.strings.add(table)
    out.offset = start + report.consumed
    if report.corrupt or (report.torn_tail and ended):
        what = f"{report.corrupt} corrupt record(s)" if report.corrupt else "a torn last record"
        where = folder.where(proc) + ("" if suffix == layout.DATA_SUFFIX else f" ({suffix})")
        warn_once(
            f"scan:{folder}:{proc}:{suffix}:{start}:{len(buf)}",
            f"{where}: skipped {what} ({report.skipped_bytes} bytes); everything else was read",
        )
    return out
