"""One writing process's records, decoded from its data (``store.codec``), or from its console file,
incrementally: a later read of a growing file decodes only what was appended since.

A rows block may name its keys by the id of a list the file defined earlier (format 2, ``codec.keys``):
the lists met so far are kept with the records (``ProcessRecords.lists``), so a later read of the same
file resolves its blocks without reading back; a read that begins in the middle of a file with nothing
kept (a tail) looks back for the definitions it lacks (``_look_back``). A block whose list is not
found is reported and skipped, never read with other names.
"""

from __future__ import annotations

from collections.abc import Iterator
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
    #: the key lists the data defined so far (``codec.keys``): what a later read's blocks refer to
    lists: codec.KeyLists = field(default_factory=codec.KeyLists)

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
        self.lists = more.lists


def newer(run_id: str, run_json: dict[str, Any]) -> bool:
    """Whether the run was written in a newer format than this reader knows (``codec.FORMAT_VERSION``);
    said once per run: what this reader cannot read of it is left out, never shown as if absent."""
    written = run_json.get("format")
    if not isinstance(written, int) or isinstance(written, bool) or written <= codec.FORMAT_VERSION:
        return False
    warn_once(
        f"format:{run_id}",
        f"run {run_id} was written by a newer tunetrack (record format {written}; this one reads up to "
        f"{codec.FORMAT_VERSION}): upgrade tunetrack to read all of it; what this version could read is shown",
    )
    return True


def read_process(
    folder: RunFolder,
    proc: str,
    ended: bool,
    start: int = 0,
    suffix: str = layout.DATA_SUFFIX,
    mid_record: bool = False,
    lists: codec.KeyLists | None = None,
) -> ProcessRecords:
    """Decode every intact record of ``proc``'s data (``suffix``: of its console file) from byte
    ``start`` (where an earlier read stopped; ``mid_record``: any byte, such as the start of a file's
    last kilobytes, and what comes before the first whole record is passed by). ``lists``: the key
    lists the earlier read met (its ``ProcessRecords.lists``); without them a read from a later byte
    than the first looks back for the lists its blocks refer to. A torn tail is normal while the
    writer is alive, so it is reported only for a process that has ended; corruption is always
    reported, and so are blocks whose key list was not found."""
    buf = folder.read_data(proc, start, suffix)
    if mid_record:
        skip = first_record(buf)
        buf, start = buf[skip:], start + skip
    look_back = lists is None and start > 0
    out = ProcessRecords(offset=start, lists=lists if lists is not None else codec.KeyLists())
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
    lost = _resolve(out, folder, proc, start if look_back else 0)
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
    if lost:
        warn_once(
            f"keys:{folder}:{proc}:{start}:{len(buf)}",
            f"{folder.where(proc)}: skipped {lost} block(s) of rows whose list of keys was not found "
            "(the record naming them is damaged); everything else was read",
        )
    return out


def _resolve(out: ProcessRecords, folder: RunFolder, proc: str, before: int) -> int:
    """Give the blocks that refer to a key list their names (every definition read is taken first, so
    a block after a damaged definition finds a later one); where some are missing and the read began
    at byte ``before`` > 0 with no lists kept, look back for them. Drop the blocks still without
    names; how many."""
    blocks = [b for b in (*out.blocks, *out.system) if b.matrix_ref is not None]
    if not blocks:
        return 0
    for block in blocks:
        codec.define(block, out.lists)
    missing = {b.matrix_ref for b in blocks if b.matrix_ref not in out.lists}
    if missing and before > 0:
        _look_back(folder, proc, before, missing, out.lists)
    unread = {id(b) for b in blocks if not codec.resolve(b, out.lists)}
    if unread:
        out.blocks[:] = [b for b in out.blocks if id(b) not in unread]
        out.system[:] = [b for b in out.system if id(b) not in unread]
    return len(unread)


#: bytes a tail reader looks back for a key list at first (then twice as many, back to the file's
#: start): a writer defines each list again every ``codec.REDEFINE_VALUES`` values (32 MiB of
#: floats), so one definition is within this window of any block
LOOK_BACK = 48 << 20


def _look_back(folder: RunFolder, proc: str, before: int, missing: set[Any], lists: codec.KeyLists) -> None:
    """Take the definitions of the ``missing`` key lists from the records before byte ``before`` of
    ``proc``'s data: the nearest window first, widened until they are found or the file's start is."""
    end, size = before, LOOK_BACK
    while end > 0 and any(m not in lists for m in missing):
        begin = max(0, end - size)
        codec.key_lists(_records_before(folder.read_data(proc, begin), begin, end), lists)
        end, size = begin, size * 2


def _records_before(buf: bytes, begin: int, end: int) -> Iterator[bytes]:
    """The payloads of the whole records that begin in ``buf`` (read from byte ``begin``) before byte
    ``end``: the one reaching across ``end`` is the last (the window after it began past it)."""
    skip = first_record(buf) if begin else 0
    report = ScanReport()
    for payload in scan(buf[skip:], report):
        yield payload
        if begin + skip + report.consumed >= end:
            return
