"""Self-delimiting, checksummed records, so a torn tail or a flipped bit is skipped, not fatal.

Each record is ``uint64 length | uint32 crc32(length) | payload | uint32 crc32(payload)`` (the
TensorBoard record layout). The length has its own checksum so a corrupted length cannot send the
reader far past the end of the file; after a bad record the reader resynchronises by scanning for the
next offset whose header checksum is valid.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

_HEADER = struct.Struct("<QI")
_LEN = struct.Struct("<Q")
_CRC = struct.Struct("<I")
#: A record larger than this is treated as corruption (a sane writer never produces one).
MAX_RECORD = 1 << 30


def frame(payload: bytes) -> bytes:
    """Wrap ``payload`` in the length/checksum envelope."""
    length = _LEN.pack(len(payload))
    return b"".join((length, _CRC.pack(zlib.crc32(length)), payload, _CRC.pack(zlib.crc32(payload))))


@dataclass
class ScanReport:
    """What a scan skipped: the reader turns this into one warning per file."""

    corrupt: int = 0
    torn_tail: bool = False
    skipped_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    #: Bytes that need no second look: everything before a torn tail (the writer may still finish it),
    #: so a reader following a growing file goes on from here.
    consumed: int = 0


def _valid_header(buf: bytes | memoryview, pos: int, end: int) -> int | None:
    """Return the payload length if a plausible, checksummed record starts at ``pos``."""
    if pos + 12 > end:
        return None
    length, crc = _HEADER.unpack_from(buf, pos)
    if zlib.crc32(buf[pos : pos + 8]) != crc or length > MAX_RECORD:
        return None
    return int(length)


def scan(buf: bytes, report: ScanReport | None = None) -> Iterator[bytes]:
    """Yield every intact payload in ``buf``; record what was skipped in ``report``."""
    report = report if report is not None else ScanReport()
    view = memoryview(buf)
    pos, end = 0, len(buf)
    report.consumed = 0
    while pos < end:
        length = _valid_header(view, pos, end)
        if length is not None and pos + 16 + length <= end:
            start = pos + 12
            payload = view[start : start + length]
            (crc,) = _CRC.unpack_from(view, start + length)
            if zlib.crc32(payload) == crc:
                pos = report.consumed = start + length + 4
                yield bytes(payload)
                continue
        if length is not None and pos + 16 + length > end:
            # A record that runs past the end: the writer was stopped mid-write (or is still writing).
            report.torn_tail = True
            report.skipped_bytes += end - pos
            return
        # Corruption: find the next offset with a valid header and an intact payload.
        nxt = _resync(view, pos + 1, end)
        report.corrupt += 1
        report.skipped_bytes += (nxt if nxt is not None else end) - pos
        if nxt is None:
            if end - pos < 16:
                report.torn_tail, report.corrupt = True, report.corrupt - 1
            else:
                report.consumed = end
            return
        pos = report.consumed = nxt


def first_record(buf: bytes) -> int:
    """Where the first whole record in ``buf`` starts (``buf`` read from the middle of a file: the
    last bytes of one, for its tail), or ``len(buf)`` if none does."""
    found = _resync(memoryview(buf), 0, len(buf))
    return len(buf) if found is None else found


def _resync(view: memoryview, pos: int, end: int) -> int | None:
    while pos + 16 <= end:
        length = _valid_header(view, pos, end)
        if length is not None and pos + 16 + length <= end:
            (crc,) = _CRC.unpack_from(view, pos + 12 + length)
            if zlib.crc32(view[pos + 12 : pos + 12 + length]) == crc:
                return pos
        pos += 1
    return None
