"""``CONSOLE`` (``"l"``), in a process's console file (``layout.CONSOLE_SUFFIX``), never in its data: a
block of printed lines, ``n`` lines; ``t``, their unix times (float64 bytes); ``o``, the stream of each
(one byte: ``STDOUT``, ``STDERR``, ``BOTH`` for the two through one channel, when they went to the same
terminal or file, or ``NOTE`` for what tunetrack itself says about the capture, such as a cut); ``x``,
their texts (a msgpack list of strings). A reader that predates it skips it, as any kind it does not
know."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .kinds import CONSOLE, COUNT, KIND, TIMES

# -- fields of a console record (and ``k``, ``n``, ``t``) --
LINE_STREAMS = "o"
LINE_TEXTS = "x"
#: a console line's stream
NOTE, STDOUT, STDERR, BOTH = 0, 1, 2, 3


def encode_console(times: Sequence[float], streams: bytes, texts: list[str]) -> dict[str, Any]:
    """A ``CONSOLE`` record: ``texts[i]`` was printed on stream ``streams[i]`` at ``times[i]``."""
    return {
        KIND: CONSOLE,
        COUNT: len(texts),
        TIMES: array("d", times).tobytes(),
        LINE_STREAMS: streams,
        LINE_TEXTS: texts,
    }


@dataclass
class ConsoleRecord:
    """A block of printed lines: parallel lists of unix times, streams and texts."""

    times: list[float]
    streams: bytes
    texts: list[str]


def decode(rec: dict[str, Any]) -> ConsoleRecord:
    """The ``ConsoleRecord`` of an unpacked console record."""
    line_times = array("d")
    line_times.frombytes(rec[TIMES])
    return ConsoleRecord(line_times.tolist(), rec[LINE_STREAMS], rec[LINE_TEXTS])
