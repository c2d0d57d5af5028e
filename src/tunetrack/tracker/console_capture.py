"""Console capture, on the training process's side: fds 1 and 2 redirected into a recorder process
(``writer/console_recorder.py``, started and spoken to as ``writer/recorder_protocol.py`` says) that writes every
byte through to where it went before and records it.

Redirecting the descriptors, not ``sys.stdout``, is what catches everything: ``print``, ``logging``,
warnings, C and C++ libraries, CUDA and NCCL messages, ``faulthandler``'s dump, and child processes,
which inherit the descriptors. Where a descriptor was a terminal it is redirected into a pty, not a
pipe, so ``isatty()`` stays true and colours, tqdm and rich draw exactly as before: the pty gets the
terminal's settings and size, with output processing off (the terminal itself turns ``\\n`` into
``\\r\\n`` when the recorder writes through). Where it was a pipe or a file it becomes a pipe, so Python
buffers it as it did.

One capture per process at a time (it belongs to the process, not to a run); anything that goes wrong
while setting it up is one warning, and the run goes on uncaptured.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

from .._warnings import warn_once
from ..writer.recorder_protocol import (
    Args,
    FromRecorder,
    Messages,
    RecordTo,
    Stop,
    Stream,
    ToRecorder,
    encode,
)

#: how long ``Tracker.start()`` waits at most for the recorder to start (it takes a few tenths of a second)
READY_WAIT = 10.0
#: how long ``stop()`` waits for the recorder to record what is left in the pipes
STOP_WAIT = 10.0
#: the pipe size asked for (Linux): a burst of printing waits in the pipe, not in the training process
PIPE_SIZE = 1 << 20

_lock = threading.Lock()
_active: Starting | ConsoleCapture | None = None


def _flush_python() -> None:
    """What Python still buffers goes where it belongs before the descriptors change under it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _terminal_pty(original: int) -> tuple[int, int]:
    """A pty set up as the terminal ``original`` is (its modes, its size), output processing off."""
    import fcntl
    import termios

    master, slave = os.openpty()
    attrs = termios.tcgetattr(original)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl.ioctl(original, termios.TIOCGWINSZ, b"\0" * 8))
    os.set_inheritable(master, False)
    os.set_inheritable(slave, False)
    return master, slave


def _channels(captured: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The captured fds grouped by where they write: fds 1 and 2 on the same terminal, pipe or file
    (a terminal, ``2>&1``, SLURM's one output file) share one channel into the recorder, so whatever
    reads there gets their bytes in exactly the order they were written (two channels would let the
    recorder read one before the other, as it cannot tell which came first); their lines are then
    recorded as ``stdout+stderr``."""
    if len(captured) == 2:
        a, b = (os.fstat(fd) for fd in captured)
        if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino):
            return [captured]
    return [(fd,) for fd in captured]


def _pipe() -> tuple[int, int]:
    read, write = os.pipe()
    F_SETPIPE_SZ = 1031  # Linux; elsewhere the default size serves
    with contextlib.suppress(OSError, AttributeError):
        import fcntl

        fcntl.fcntl(write, F_SETPIPE_SZ, PIPE_SIZE)
    return read, write


def start(only_stderr: bool, max_bytes: int) -> Starting | None:
    """Start a recorder process for this process's fds 1 and 2 (``only_stderr``: fd 2 alone); they
    are redirected into it by ``Starting.redirect()``, so that its start overlaps the tracker's own.
    None if a capture is already on, or it cannot be set up (warned about once)."""
    global _active
    with _lock:
        if _active is not None:
            return None
        try:
            _active = Starting((2,) if only_stderr else (1, 2), max_bytes)
        except Exception as exc:
            warn_once("console", f"the console is not recorded ({exc!r}); training goes on")
            return None
        return _active


class Starting:
    """A recorder process started, the descriptors not yet redirected into it (``redirect()``)."""

    def __init__(self, captured: tuple[int, ...], max_bytes: int) -> None:
        self.opened: list[int] = []  # closed if the start fails
        self.originals: dict[int, int] = {}  # captured fd -> a duplicate of what it was
        self.ends: dict[int, int] = {}  # captured fd -> the write end it is to become
        try:
            self._spawn(captured, max_bytes)
        except BaseException:
            self._close_all()
            raise

    def _spawn(self, captured: tuple[int, ...], max_bytes: int) -> None:
        streams, reads = [], []
        for fd in captured:
            self.originals[fd] = self._keep(os.dup(fd))
        for fds in _channels(captured):
            is_pty = os.isatty(fds[0])
            read, write = _terminal_pty(fds[0]) if is_pty else _pipe()
            self.ends.update(dict.fromkeys(fds, self._keep(write)))
            reads.append(self._keep(read))
            streams.append(Stream(fds, read, self.originals[fds[0]], is_pty))
        control_read, self.control = map(self._keep, os.pipe())
        self.ack, ack_write = map(self._keep, os.pipe())
        package_root = str(Path(__file__).resolve().parents[2])  # where this tunetrack is imported from
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
        }
        if not sys.executable:
            raise RuntimeError("no Python executable to start the console recorder with")
        self.recorder = subprocess.Popen(
            Args(tuple(streams), control_read, ack_write, max_bytes).command(sys.executable),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.originals[2],  # always captured: the recorder's own complaints go where stderr went
            pass_fds=[*reads, *self.originals.values(), control_read, ack_write],
            env=env,
        )
        for fd in [*reads, control_read, ack_write]:  # the recorder's now
            self._release(fd)

    def _keep(self, fd: int) -> int:
        self.opened.append(fd)
        return fd

    def _release(self, fd: int) -> None:
        os.close(fd)
        self.opened.remove(fd)

    def _close_all(self) -> None:
        for fd in self.opened:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.opened.clear()

    def cancel(self) -> None:
        """The run did not start after all: the recorder goes, nothing was redirected."""
        global _active
        self.recorder.kill()
        self._close_all()
        with _lock:
            _active = None

    def redirect(self) -> ConsoleCapture | None:
        """Once the recorder is ready (it says so; up to ``READY_WAIT``), fds 1 and 2 write into it,
        so what is printed from then on is recorded, interleaved as printed; None if it never got
        ready (warned about once)."""
        global _active
        ready, _, _ = select.select([self.ack], [], [], READY_WAIT)
        line = os.read(self.ack, 64) if ready else b""
        if not any("ready" in message for message in Messages[FromRecorder]().feed(line)):
            self.cancel()
            warn_once("console", "the console recorder did not start; the console is not recorded")
            return None
        _flush_python()
        for fd, write in self.ends.items():
            os.dup2(write, fd)
        for write in set(self.ends.values()):
            self._release(write)
        capture = ConsoleCapture(self.originals, self.recorder, self.control, self.ack)
        self.opened.clear()
        with _lock:
            _active = capture
        return capture


class ConsoleCapture:
    """fds 1 and 2 (or 2 alone) redirected into a recorder process, until ``stop()``."""

    def __init__(
        self, fds: dict[int, int], recorder: subprocess.Popen[bytes], control: int, ack: int
    ) -> None:
        self.originals = fds  # captured fd -> a duplicate of what it was
        self.recorder = recorder
        self.control = control
        self.ack = ack
        self.restored = False
        self.stopped = threading.Event()
        self.last: list[str] = []  # the recorder's answer to the stop
        self._restore_lock = threading.Lock()
        self.watcher = threading.Thread(target=self._watch, name="tunetrack-console", daemon=True)
        self.watcher.start()

    def record_to(self, path: Path) -> None:
        """Where the recorder writes: the process's console file (``ProcessWriter.console_path``),
        known once the process's files are open (another node's process: once it joined the run)."""
        self._send(RecordTo(path=str(path)))

    def _send(self, message: ToRecorder) -> bool:
        try:
            os.write(self.control, encode(message))
            return True
        except OSError:
            return False

    def _watch(self) -> None:
        """Read the recorder's answers; if it dies while capturing, give the descriptors back at once
        (a print must never fail because nobody reads the pipe)."""
        messages = Messages[FromRecorder]()
        while True:
            try:
                chunk = os.read(self.ack, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            for message in messages.feed(chunk):
                if "done" in message:
                    self.last = message["last"]
                    self.stopped.set()
        if not self.stopped.is_set() and not self.restored:
            self._restore()
            warn_once("console-lost", "the console recorder stopped; the rest of the console is not recorded")
        self.stopped.set()
        os.close(self.ack)
        with contextlib.suppress(subprocess.TimeoutExpired):  # reaped: it closes the ack pipe as it exits
            self.recorder.wait(timeout=60)

    def _restore(self) -> None:
        global _active
        with self._restore_lock:
            if self.restored:
                return
            self.restored = True
            _flush_python()
            for fd, original in self.originals.items():
                with contextlib.suppress(OSError):
                    os.dup2(original, fd)
                    os.close(original)
        with _lock:
            if _active is self:
                _active = None

    def stop(self, error: str | None = None) -> list[str]:
        """Give fds 1 and 2 back, and wait (up to ``STOP_WAIT``) for the recorder to record what is
        left: the last lines it recorded (an alert's text). ``error``, the traceback Python is about
        to print on stderr, is recorded as printed. The recorder itself stays while a child process
        still writes into the descriptors it inherited, passing its output through."""
        self._restore()
        if self._send(Stop(stop=True, error=error)):
            self.stopped.wait(STOP_WAIT)
        with contextlib.suppress(OSError):
            os.close(self.control)
        return [str(line) for line in self.last]
