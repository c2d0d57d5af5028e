"""A run's console: what each of its processes printed (its console file, ``store.codec.CONSOLE``
records), as one stream of lines in time order, each with its host and rank; and the known failure
(``tunetrack.failures``) its last lines show.

Each process's lines are in the order it printed them; lines of different processes are merged by
time without reordering any process's own (a clock that stepped back moves no line of a process
past another of its own).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from .. import failures
from ..store import codec, layout
from ..store.base import RunFolder
from .processes import Process
from .records import ProcessRecords, read_process

#: a console line's stream, as people read it
STREAMS = {
    codec.STDOUT: "stdout",
    codec.STDERR: "stderr",
    codec.BOTH: "stdout+stderr",
    codec.NOTE: "tunetrack",
}
#: how much of the end of each process's console ``last_lines`` reads (not the whole file)
TAIL_BYTES = 256 * 1024
#: processes that started this long before the latest primary one belong to its attempt (the ranks of
#: a job start within seconds of each other); earlier ones are an earlier attempt's
ATTEMPT_SLACK = 600.0


@dataclass(frozen=True)
class Line:
    """One printed line: when (unix time), on which stream, by which process (host and global rank)."""

    time: float
    stream: str
    text: str
    host: str
    rank: int

    def as_json(self) -> dict[str, object]:
        return {
            "time": self.time,
            "stream": self.stream,
            "text": self.text,
            "host": self.host,
            "rank": self.rank,
        }


def lines_of(proc: Process, records: ProcessRecords) -> list[Line]:
    """``proc``'s lines in ``records`` (its console records, decoded)."""
    host, rank = str(proc.meta.get("host", "?")), proc.rank
    return [
        Line(t, STREAMS.get(s, "?"), x, host, rank)
        for record in records.console
        for t, s, x in zip(record.times, record.streams, record.texts)
    ]


@dataclass
class ProcessConsole:
    """A process's lines read so far, and where in its console file the next read starts."""

    lines: list[Line] = field(default_factory=list)
    offset: int = 0


def read_console(folder: RunFolder, proc: Process, known: ProcessConsole | None) -> ProcessConsole:
    """``proc``'s lines: ``known`` (read before) and whatever its console file gained since."""
    size = folder.data_size(proc.name, layout.CONSOLE_SUFFIX)
    if known is None or size < known.offset:  # first read, or the file was replaced: from the start
        known = ProcessConsole()
    if size > known.offset:
        records = read_process(folder, proc.name, proc.ended, known.offset, layout.CONSOLE_SUFFIX)
        known.lines += lines_of(proc, records)
        known.offset = records.offset
    return known


def last_lines(folder: RunFolder, proc: Process) -> list[Line]:
    """``proc``'s last lines (those in its console's last ``TAIL_BYTES``), without reading the rest."""
    start = max(folder.data_size(proc.name, layout.CONSOLE_SUFFIX) - TAIL_BYTES, 0)
    records = read_process(folder, proc.name, proc.ended, start, layout.CONSOLE_SUFFIX, mid_record=start > 0)
    return lines_of(proc, records)


def merged(per_process: Iterable[list[Line]]) -> list[Line]:
    """The processes' lines as one stream in time order (no process's own lines reordered)."""
    return list(heapq.merge(*per_process, key=lambda line: line.time))


def select(
    lines: list[Line],
    rank: int | None = None,
    since: float | None = None,
    grep: str | None = None,
    tail: int | None = None,
) -> list[Line]:
    """The lines of one ``rank``, printed at or after ``since``, matching the regular expression
    ``grep``; the last ``tail`` of them. (``re.error`` for a ``grep`` that is no regular expression.)"""
    pattern = re.compile(grep) if grep else None
    out = [
        line
        for line in lines
        if (rank is None or line.rank == rank)
        and (since is None or line.time >= since)
        and (pattern is None or pattern.search(line.text))
    ]
    return out[-tail:] if tail is not None and tail > 0 else [] if tail == 0 else out


class Failure(NamedTuple):
    """A known failure (``tunetrack.failures``) a run's last lines show: its ``name``, the ``rank``
    that shows it, and its ``cause`` in one line (the exception's own line, or a C++ ``what():``)."""

    name: str
    rank: int
    cause: str

    def __str__(self) -> str:
        return f"{self.name} on rank {self.rank}"


def failure(folder: RunFolder, procs: list[Process]) -> Failure | None:
    """The known failure the last lines of the run's latest attempt show, and where:
    ``CUDA out of memory on rank 3``. The most specific one wins, then the earliest printed."""
    primaries = [p for p in procs if p.primary] or procs
    if not primaries:
        return None
    attempt = [p for p in procs if p.start >= primaries[-1].start - ATTEMPT_SLACK]
    found = []
    for proc in attempt:
        lines = last_lines(folder, proc)
        texts = [line.text for line in lines]
        hit = failures.find(texts)
        if hit is not None:
            found.append((hit.rank, lines[hit.line].time, proc.rank, hit, texts))
    if not found:
        return None
    *_, rank, hit, texts = min(found, key=lambda f: f[:3])
    return Failure(hit.name, rank, failures.cause_line(texts, hit))
