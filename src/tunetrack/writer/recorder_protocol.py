"""The console recorder's protocol: how a training process (``tracker/console.py``) starts its console
recorder (``writer/console.py``, a process of its own) and what the two say to each other. Both sides
use this module, so the command line and the messages have one definition.

The training process runs ``Args.command`` (``python -m tunetrack.writer.console_recorder`` and its options;
the recorder reads them back with ``Args.parse``): one ``Stream`` per pipe or pty the recorder reads,
the control pipe it listens on, the ack pipe it answers on, and how much printed output it records at
most. Then they exchange one JSON object a line (``encode``, and ``Messages`` to read them back):

- on the ack pipe, recorder to training process: ``Ready`` once it reads (the training process
  redirects its fds then), and ``Done`` after a stop, with the last lines it recorded (an alert's text);
- on the control pipe, training process to recorder: ``RecordTo``, where to record (the process's
  console file, known once its files are open), and ``Stop`` (``finish()``: the fds are given back;
  record what is still in the pipes, and ``error``, the traceback Python is about to print).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Generic, TypedDict, TypeVar, cast, final

from ..store import codec

#: the module the recorder runs as
MODULE = "tunetrack.writer.console_recorder"
#: the stream a channel's lines are recorded as, by the fds that write into it (both: ``codec.BOTH``)
_KINDS: dict[tuple[int, ...], int] = {(1,): codec.STDOUT, (2,): codec.STDERR}


@dataclass(frozen=True)
class Stream:
    """One pipe (or pty) the recorder reads: ``--stream FDS:READ:ORIGINAL:PTY``."""

    #: the training process's fds that write into it: ``(1,)``, ``(2,)``, or ``(1, 2)`` when both went
    #: to the same terminal or file (one channel keeps them interleaved as printed)
    fds: tuple[int, ...]
    #: its read end, the recorder's
    read: int
    #: a duplicate of where those fds wrote before: the recorder writes every byte through to it
    original: int
    #: it is a pty (the fds were a terminal): the recorder passes the terminal's size on to it
    pty: bool

    @property
    def kind(self) -> int:
        """The stream its lines are recorded as (``codec.STDOUT``, ``STDERR`` or ``BOTH``)."""
        return _KINDS.get(self.fds, codec.BOTH)

    def spec(self) -> str:
        return f"{','.join(map(str, self.fds))}:{self.read}:{self.original}:{int(self.pty)}"

    @classmethod
    def parse(cls, spec: str) -> Stream:
        fds, read, original, pty = spec.split(":")
        return cls(tuple(int(fd) for fd in fds.split(",")), int(read), int(original), pty == "1")


@dataclass(frozen=True)
class Args:
    """The recorder's command line."""

    streams: tuple[Stream, ...]
    #: the control pipe's read end (``RecordTo``, ``Stop``) and the ack pipe's write end (``Ready``,
    #: ``Done``)
    control: int
    ack: int
    #: printed bytes recorded at most (``settings.console_max()``); past it the middle is cut
    max_bytes: int

    def command(self, python: str) -> list[str]:
        """The recorder's command, run by the ``python`` interpreter."""
        streams = [arg for stream in self.streams for arg in ("--stream", stream.spec())]
        return [python, "-m", MODULE, *streams] + [
            "--control",
            str(self.control),
            "--ack",
            str(self.ack),
            "--max-bytes",
            str(self.max_bytes),
        ]

    @classmethod
    def parse(cls, argv: list[str] | None = None) -> Args:
        """The arguments ``command`` gave (``sys.argv`` when ``argv`` is None)."""
        parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
        parser.add_argument(
            "--stream", action="append", default=[], help="FDS:READ_FD:ORIGINAL_FD:PTY (FDS: 1, 2 or 1,2)"
        )
        parser.add_argument("--control", type=int, required=True)
        parser.add_argument("--ack", type=int, required=True)
        parser.add_argument("--max-bytes", type=int, required=True)
        args = parser.parse_args(argv)
        return cls(tuple(map(Stream.parse, args.stream)), args.control, args.ack, args.max_bytes)


@final
class Ready(TypedDict):
    """Recorder to training process: it reads its streams; the fds may be redirected."""

    ready: bool


@final
class Done(TypedDict):
    """Recorder to training process, after ``Stop``: what was left is recorded."""

    done: bool
    #: the last lines it recorded
    last: list[str]


@final
class RecordTo(TypedDict):
    """Training process to recorder: record into the console file at ``path``."""

    path: str


@final
class Stop(TypedDict):
    """Training process to recorder: the fds are given back; record what is left, then only pass
    bytes through."""

    stop: bool
    #: the traceback Python is about to print on stderr after the capture ended, recorded as printed
    error: str | None


#: what the recorder says, on the ack pipe
FromRecorder = Ready | Done
#: what the training process says, on the control pipe
ToRecorder = RecordTo | Stop
M = TypeVar("M", FromRecorder, ToRecorder)


def encode(message: FromRecorder | ToRecorder) -> bytes:
    """``message`` as its line on a pipe."""
    return json.dumps(message).encode() + b"\n"


class Messages(Generic[M]):
    """The messages in what is read off one pipe (``Messages[ToRecorder]()`` on the control pipe), one
    JSON object a line; a line cut between reads waits for its end."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[M]:
        *lines, self._buffer = (self._buffer + chunk).split(b"\n")
        return [cast(M, json.loads(line)) for line in lines]
