"""The console recorder: a small process of its own (``python -m tunetrack.writer.console_recorder``) that a
training process starts in ``Tracker.start()`` (``tracker/console_capture.py``), with the read ends of the
pipes (or ptys) its fds 1 and 2 now write into, and the fds they wrote to before.

Why a process and not a thread: it outlives the training process. What was printed before a SIGKILL,
the OOM killer or a segfault (``faulthandler`` writes its dump to fd 2) is in the pipe or already
recorded; the recorder reads to EOF, which comes when the last writer is gone (the training process
and any child that inherited the descriptors), records it and exits. It ignores SIGINT, SIGTERM,
SIGHUP and SIGQUIT, which a terminal or a job scheduler sends to the whole process group, so it stays
to read what the training process prints while it dies of them.

Two threads, so that the terminal never waits for the disk: the main thread reads each stream and at
once writes every byte through to the fd it was meant for (the terminal looks as before), then hands
it to the recording thread; that one cuts lines, masks secrets (``redact.redact_text``), keeps the
final state of a line that carriage returns redrew (a progress bar), drops terminal escape codes, cuts
lines longer than ``MAX_LINE``, and appends ``codec.CONSOLE`` records to the console file with one
write each. If the disk is slower than the printing, up to ``BACKLOG`` bytes wait in memory; past that,
bytes are passed through but not recorded, and a note says how many.

The file may be named later than the recording starts (another node's process learns its run when
global rank 0 has published it): records wait in memory until then. Past ``max_bytes`` of printed
output the first half is kept as it came, the last half is kept in memory and written when the
process ends, with a note between them saying how much was cut.

The training process talks to it over a control pipe and it answers on an ack pipe
(``recorder_protocol``: its command line and the messages): where to record, and at ``finish()`` to
stop (record what is still in the pipes, and the traceback Python is about to print after capture
ended, then answer with the last lines, for the alert, and only pass bytes through from then on).
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import select
import signal
import threading
import time
from collections import deque
from typing import Any

from ..redact import redact_text
from ..store import codec
from ..store.framing import frame
from .recorder_protocol import Args, Done, Messages, Ready, ToRecorder, encode

#: bytes one read takes off a pipe
READ = 1 << 20
#: characters a stored line keeps; the rest is cut, and the cut is said
MAX_LINE = 16_384
#: text characters per record, so that a reader reading a file's tail resynchronizes within one record
RECORD_CHARS = 1 << 16
#: bytes waiting for the recording thread before more are passed through unrecorded
BACKLOG = 64 << 20
#: lines the stop answer carries (an alert's text)
LAST_LINES = 20
#: CSI, OSC and the other escape sequences (ESC, intermediate bytes, a final byte: ``tput sgr0``'s
#: ``ESC ( B``, a reset's ``ESC c``, ``ESC 7``): colours and cursor moves are for terminals
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]")


def overlay(line: str) -> str:
    """What a terminal shows of a line that carriage returns redrew: each part overwrites the start
    of what was there (``"50%\\r100%"`` is ``"100%"``; ``"abcdef\\rXY"`` is ``"XYcdef"``)."""
    parts = line.split("\r")
    shown = parts[0]
    for part in parts[1:]:
        shown = part + shown[len(part) :]
    return shown


class Lines:
    """One stream's bytes, cut into lines: UTF-8 decoded across reads, escapes dropped, carriage
    returns applied, secrets masked, long lines cut. The line being printed stays bounded however long
    it grows without a newline."""

    def __init__(self, skip_first: bool = False) -> None:
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.partial = ""
        self.over = 0  # characters of the partial line already cut off
        self.skip_first = skip_first  # the first line starts mid-line (after a cut): dropped

    def feed(self, data: bytes, final: bool = False) -> list[str]:
        """The lines ``data`` completes; with ``final``, the line being printed too (the stream ended)."""
        text = self.decoder.decode(data, final)
        if "\x1b" in text:
            text = _ESCAPES.sub("", text)
        text = redact_text(text)
        parts = text.split("\n")
        continued = self.partial + parts[0]
        if len(parts) == 1 and not final:
            self.partial = continued
            if len(self.partial) > 2 * MAX_LINE:
                self._squeeze()
            return []
        lines = [continued, *parts[1:-1]] if len(parts) > 1 else []
        self.partial = parts[-1] if len(parts) > 1 else continued
        if final:
            lines += [self.partial] if self.partial else []
            self.partial = ""
        if not lines:
            return []
        if continued != parts[0]:
            lines[0] = redact_text(lines[0])  # a secret may straddle two reads
        lines[0] = self._finished(lines[0], self.over)
        self.over = 0
        if "\r" in text or len(text) > MAX_LINE:
            lines[1:] = [self._finished(line, 0) for line in lines[1:]]
        if self.skip_first:
            self.skip_first = False
            del lines[0]
        return lines

    def _squeeze(self) -> None:
        if "\r" in self.partial:
            self.partial = overlay(self.partial)
        if len(self.partial) > MAX_LINE:
            self.over += len(self.partial) - MAX_LINE
            self.partial = self.partial[:MAX_LINE]

    @staticmethod
    def _finished(line: str, over: int) -> str:
        if "\r" in line:
            line = overlay(line)
        if over or len(line) > MAX_LINE:
            cut = over + max(len(line) - MAX_LINE, 0)
            line = f"{line[:MAX_LINE]} … [{cut:,} characters cut]"
        return line


class Recorder(threading.Thread):
    """The recording thread: chunks of (time, stream, bytes) in, ``CONSOLE`` records out."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(name="tunetrack-console-recorder", daemon=True)
        self.head_budget = max_bytes // 2
        self.tail_budget = max_bytes - self.head_budget
        self.chunks: deque[tuple[float, int, bytes]] = deque()
        self.queued = 0
        self.unrecorded = 0  # bytes passed through but not recorded (the disk could not keep up)
        self.wake = threading.Condition()
        self.closing = False
        self.lines: dict[int, Lines] = {}
        self.seen = 0  # bytes recorded in the head
        self.tail: deque[tuple[float, int, bytes]] | None = None  # past the head: the last bytes
        self.tail_bytes = 0
        self.cut = 0  # bytes dropped between the head and the tail
        self.fd: int | None = None  # None until the file is named and opened; -1 once recording failed
        self.path: str | None = None
        self.waiting: list[bytes] = []  # framed records, until the file is named
        self.last: deque[str] = deque(maxlen=LAST_LINES)

    # -- the main thread's calls ------------------------------------------------------------------
    def put(self, stream: int, data: bytes) -> None:
        with self.wake:
            if self.queued + len(data) > BACKLOG:
                self.unrecorded += len(data)
                return
            self.chunks.append((time.time(), stream, data))
            self.queued += len(data)
            self.wake.notify()

    def record_to(self, path: str) -> None:
        with self.wake:
            self.path = path
            self.wake.notify()

    def note(self, stream: int, text: str) -> None:
        """Record ``text`` as printed on ``stream`` (the traceback Python prints after capture ended)."""
        self.put(stream, text.encode("utf-8", "replace"))

    def close(self, timeout: float) -> list[str]:
        """Record what is queued and what is held back, then stop; the last lines recorded."""
        with self.wake:
            self.closing = True
            self.wake.notify()
        self.join(timeout)
        return list(self.last)

    # -- the thread --------------------------------------------------------------------------------
    def run(self) -> None:
        while True:
            with self.wake:
                while not (self.chunks or self.closing or (self.path and self.fd is None)):
                    self.wake.wait()
                chunks, self.chunks, self.queued = self.chunks, deque(), 0
                closing, unrecorded, self.unrecorded = self.closing, self.unrecorded, 0
            if self.path and self.fd is None:
                self._open()
            if unrecorded:
                self._note(
                    f"[tunetrack] {unrecorded:,} bytes were shown but not recorded: the disk was too slow"
                )
            self._record(chunks)
            if closing:
                self._finish()
                return

    def _record(self, chunks: deque[tuple[float, int, bytes]], whole: bool = False) -> None:
        """Record ``chunks`` as lines while the head has room (``whole``: all of them, the tail)."""
        times: list[float] = []
        streams = bytearray()
        texts: list[str] = []
        for at, stream, data in chunks:
            if self.tail is not None:
                self._keep_tail(at, stream, data)
                continue
            lines = self._lines(stream).feed(data)
            times += [at] * len(lines)
            streams += bytes([stream]) * len(lines)
            texts += lines
            self.seen += len(data)
            if (
                self.seen >= self.head_budget and not whole
            ):  # the head is full: from here on only the tail is kept
                for s, state in self.lines.items():
                    rest = state.feed(b"", final=True)
                    times += [at] * len(rest)
                    streams += bytes([s]) * len(rest)
                    texts += rest
                self.lines = {}
                self.tail = deque()
        self._write(times, bytes(streams), texts)

    def _keep_tail(self, at: float, stream: int, data: bytes) -> None:
        assert self.tail is not None
        self.tail.append((at, stream, data))
        self.tail_bytes += len(data)
        while self.tail_bytes - len(self.tail[0][2]) >= self.tail_budget:
            dropped = len(self.tail.popleft()[2])
            self.tail_bytes -= dropped
            self.cut += dropped

    def _finish(self) -> None:
        tail, self.tail = self.tail, None
        if tail is not None and self.cut:
            self._note(
                f"[tunetrack] {self.cut:,} bytes of console output were cut here "
                f"(TUNETRACK_CONSOLE_MAX: the first {self.head_budget:,} and the last {self.tail_budget:,} "
                "are kept)",
                tail[0][0] if tail else time.time(),
            )
            self.lines = {stream: Lines(skip_first=True) for _, stream, _ in tail}
        if tail:
            self._record(tail, whole=True)
        times: list[float] = []
        streams = bytearray()
        texts: list[str] = []
        for stream, state in self.lines.items():  # lines printed without their newline yet
            rest = state.feed(b"", final=True)
            times += [time.time()] * len(rest)
            streams += bytes([stream]) * len(rest)
            texts += rest
        self._write(times, bytes(streams), texts)
        if self.fd is not None and self.fd >= 0:
            os.close(self.fd)

    def _lines(self, stream: int) -> Lines:
        state = self.lines.get(stream)
        if state is None:
            state = self.lines[stream] = Lines()
        return state

    def _note(self, text: str, at: float | None = None) -> None:
        self._write([at or time.time()], bytes([codec.NOTE]), [text])

    def _write(self, times: list[float], streams: bytes, texts: list[str]) -> None:
        if not texts:
            return
        self.last.extend(texts[-LAST_LINES:])
        if self.fd == -1:
            return
        start = 0
        while start < len(texts):  # records of about RECORD_CHARS characters
            end, size = start, 0
            while end < len(texts) and (end == start or size + len(texts[end]) <= RECORD_CHARS):
                size += len(texts[end])
                end += 1
            record = codec.encode_console(times[start:end], streams[start:end], texts[start:end])
            self.waiting.append(frame(codec.pack(record)))
            start = end
        if self.fd is not None:
            self._flush()

    def _open(self) -> None:
        assert self.path is not None
        try:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            self._complain(f"cannot record the console in {self.path}: {exc}")
            self.fd, self.waiting = -1, []
            return
        self._flush()

    def _flush(self) -> None:
        assert self.fd is not None
        data, self.waiting = b"".join(self.waiting), []
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:  # a full or gone disk: the terminal goes on, recording stops
            self._complain(f"cannot record the console any more ({exc})")
            os.close(self.fd)
            self.fd = -1

    @staticmethod
    def _complain(text: str) -> None:
        with contextlib.suppress(OSError):
            os.write(2, f"tunetrack: {text}\n".encode())


def _pass_through(fd: int, data: bytes) -> bool:
    """Write all of ``data`` to ``fd`` (the terminal, file or pipe the stream was meant for); False
    once it cannot take more (a closed terminal): from then on the stream is only recorded."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])
        except InterruptedError:
            continue
        except OSError:
            return False
    return True


def _copy_winsize(source: int, target: int) -> None:
    """The terminal's new size onto the pty (SIGWINCH), so that programs drawing on it draw as wide
    as the terminal now is."""
    import fcntl
    import termios

    try:
        size = fcntl.ioctl(source, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(target, termios.TIOCSWINSZ, size)
    except OSError:
        pass


def serve(args: Args) -> None:
    """Pass ``args.streams`` through and record them, until every one is at EOF."""
    recorder = Recorder(args.max_bytes)
    recorder.start()
    streams = {stream.read: stream.kind for stream in args.streams}
    originals = {stream.read: stream.original for stream in args.streams}
    ptys = [(stream.original, stream.read) for stream in args.streams if stream.pty]
    control, ack = args.control, args.ack
    if ptys:

        def resized(*_: Any) -> None:
            for original, read in ptys:
                _copy_winsize(original, read)

        signal.signal(signal.SIGWINCH, resized)
    poller = select.poll()
    for fd in [*streams, control]:
        poller.register(fd, select.POLLIN)
    open_streams, recording, messages = set(streams), True, Messages[ToRecorder]()

    def read(fd: int) -> bool:
        try:
            data = os.read(fd, READ)
        except BlockingIOError:
            return False
        except OSError:  # EIO: a pty whose last writer closed it
            data = b""
        if not data:
            poller.unregister(fd)
            open_streams.discard(fd)
            os.close(fd)
            return False
        if originals[fd] >= 0 and not _pass_through(originals[fd], data):
            originals[fd] = -1
        if recording:
            recorder.put(streams[fd], data)
        return True

    control_open = True
    # Both ends matter: the streams until every writer is gone, the control channel until the training
    # process closes it. ``finish()`` gives fds 1 and 2 back before it says stop, so the streams can
    # reach their end first: the stop (and the traceback it carries) still has to be read.
    while open_streams or control_open:
        try:
            events = poller.poll()
        except InterruptedError:
            continue
        for fd, _ in events:
            if fd != control:
                read(fd)
                continue
            chunk = os.read(control, 65536)
            if not chunk:  # the training process is gone (or finished): read on to EOF
                poller.unregister(control)
                control_open = False
                continue
            for message in messages.feed(chunk):
                if "path" in message:
                    recorder.record_to(message["path"])
                if "stop" in message and recording:
                    for stream_fd in list(open_streams):  # what was printed before fds were restored
                        os.set_blocking(stream_fd, False)
                        while stream_fd in open_streams and read(stream_fd):
                            pass
                        if stream_fd in open_streams:
                            os.set_blocking(stream_fd, True)
                    if message["error"]:
                        recorder.note(codec.STDERR, message["error"])
                    recording = False
                    last = recorder.close(timeout=10.0)
                    _pass_through(ack, encode(Done(done=True, last=last)))
    if recording:
        recorder.close(timeout=60.0)


def main(argv: list[str] | None = None) -> None:
    args = Args.parse(argv)
    _pass_through(args.ack, encode(Ready(ready=True)))  # the training process redirects its fds now
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)
    serve(args)


if __name__ == "__main__":
    main()
