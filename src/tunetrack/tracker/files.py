"""The files a run produced or used, as the Tracker's background threads read them: where a location
is on this machine, what a folder holds, each file's SHA-256, and the CPU priority such reading runs
at (checkpoints and artifacts share them)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path

_CHUNK = 1 << 20


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


def sha256(path: Path, stop: threading.Event | None = None) -> str | None:
    """The file's SHA-256 (``hashlib`` releases the interpreter lock over large buffers, so training's
    threads run meanwhile); None if ``stop`` was set before the end."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while stop is None or not stop.is_set():
            if not (chunk := f.read(_CHUNK)):
                return h.hexdigest()
            h.update(chunk)
    return None


def lowest_priority() -> None:
    """Run the calling thread at the lowest CPU priority (Linux: a thread is a task of its own), so
    that on a CPU-bound machine training's threads come first."""
    with contextlib.suppress(AttributeError, OSError):  # not on every platform
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
