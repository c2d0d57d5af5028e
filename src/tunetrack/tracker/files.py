"""The files a run produced or used, as the Tracker's background threads read them: where a location
is on this machine, what a folder holds, each file's SHA-256 (hashed in a process of its own), and the
CPU priority such work runs at (checkpoints and artifacts share them)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path


def local(location: str) -> Path | None:
    """A location on this machine's file system; None for a URL (``s3://``, ``hf://``)."""
    return None if "://" in location else Path(location)


def listing(path: Path) -> list[tuple[str, int]]:
    """The files of a folder (recursively, by their paths inside it) or of a single file, with their
    sizes. Raises ``FileNotFoundError`` where it is gone (rotation removed a checkpoint before it was
    listed), rather than listing nothing: an empty listing would read as a folder of no files."""
    if path.is_file():
        return [(path.name, path.stat().st_size)]
    if not path.is_dir():
        raise FileNotFoundError(f"no file or folder at {path}")
    out = []
    for root, _, files in os.walk(path, onerror=_raise):
        for name in files:
            full = Path(root) / name
            out.append((full.relative_to(path).as_posix(), full.stat().st_size))
    return sorted(out)


def _raise(exc: OSError) -> None:
    raise exc


#: the hasher process, one per run for as long as it has files to hash: reads paths, each ended by a
#: NUL byte (an empty one ends a batch), and writes a line for each file as soon as it is hashed (its
#: SHA-256, or ``!`` where it cannot be read), then ``.`` for the batch; at the lowest CPU priority
_HASHER = """
import hashlib, os, sys
os.nice(19)
pending = b""
while chunk := sys.stdin.buffer.read1(65536):
    *names, pending = (pending + chunk).split(b"\\0")
    for name in names:
        if not name:
            print(".", flush=True)
            continue
        try:
            with open(name, "rb") as f:
                print(hashlib.file_digest(f, "sha256").hexdigest(), flush=True)
        except OSError:
            print("!", flush=True)
"""


class Hasher:
    """SHA-256 of files in a process of its own, started at the first files and kept for the next
    ones (a save every few steps pays no start-up). Not a thread of the training process: a thread
    hashing at the lowest priority still takes the interpreter lock between reads, and when the
    machine is busy the training thread then waits on it (the lock is handed to a thread the OS seldom
    runs). A process shares no lock, and ``stop`` ends it at once. One caller at a time."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        #: set by ``stop``: no file is hashed any more
        self.stopped = threading.Event()

    def digests(self, paths: Sequence[Path]) -> list[str | None]:
        """Each file's SHA-256, in order; None for those not hashed because ``stop`` came first.
        Raises ``FileNotFoundError`` where a file could not be read (removed meanwhile)."""
        with self._lock:
            if self.stopped.is_set():
                return [None] * len(paths)
            if self._proc is None:
                self._proc = subprocess.Popen(
                    [sys.executable, "-c", _HASHER],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        out: list[str | None] = []
        try:
            proc.stdin.write(b"".join(os.fsencode(p) + b"\0" for p in paths) + b"\0")
            proc.stdin.flush()
            while (line := proc.stdout.readline().decode().strip()) not in (".", ""):
                out.append(line)
        except OSError:  # stopped while it worked (a broken pipe)
            pass
        if "!" in out:
            raise FileNotFoundError(f"could not read {paths[out.index('!')]}")
        return out + [None] * (len(paths) - len(out))

    def stop(self) -> None:
        """End the hashing under way (its files are left unhashed) and any later one."""
        with self._lock:
            self.stopped.set()
            if self._proc is not None:
                self._proc.kill()
                self._proc.wait()
