"""Checkpoints as the Tracker records them: a ``checkpoint`` event at once (step, location, the kind
if the caller said it, and the metrics at that step), then, off the training thread, what it holds
(``checkpoint_files``: each file's size and SHA-256, and the kind its files say) and, once rotation (``save_total_limit``) removed it, ``checkpoint_deleted``.
A reader joins the three by location (``reader.checkpoints``): a checkpoint is never forgotten.

Hashing runs in a process of its own (``files.Hasher``), driven by a thread of its own, never on the
caller's or the writer's thread: a save is never delayed by it, nor the run's metrics, nor the training
thread by the interpreter lock. ``finish()`` waits for it up to ``HASH_WAIT`` seconds; a file not
hashed by then is recorded with its size alone.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._warnings import warn_once
from .files import Hasher, listing, local

#: the kinds of checkpoint, from the files it holds
ADAPTER, MODEL, STATE, FILES = "adapter", "model", "state", "files"
#: how long ``finish()`` waits for the hashes still being computed
HASH_WAIT = 60.0
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_STATE = ("optimizer", "scheduler", "rng_state", "trainer_state", "scaler")


def kind_of(names: list[str]) -> str:
    """``adapter`` (PEFT's weights), ``model`` (full weights), ``state`` (optimizer and trainer state
    only) or ``files``: what a checkpoint's file names say it holds."""
    base = [Path(n).name for n in names]
    if any(n.startswith("adapter_model") for n in base):
        return ADAPTER
    if any(n.endswith(_WEIGHTS) and not n.startswith(_STATE) for n in base):
        return MODEL
    if any(n.startswith(_STATE) for n in base):
        return STATE
    return FILES


class Checkpoints:
    """A run's checkpoints (a part of ``Tracker``): ``record`` sends the ``checkpoint`` event through
    ``event`` at once and queues the hashing; ``close`` waits for it."""

    def __init__(self, event: Callable[..., None]) -> None:
        self._event = event
        self._jobs: queue.Queue[tuple[int, str, Path] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._live: dict[str, int] = {}  # location -> step, of checkpoints not yet seen deleted
        #: stopped once ``close``'s wait ran out: the files not hashed yet are recorded with their size
        self._hasher = Hasher()
        self._lock = threading.Lock()

    def record(self, location: str, step: int, kind: str | None, metrics: Mapping[str, Any] | None) -> None:
        """Record a checkpoint saved at ``step`` in ``location`` (a folder, a file or a URL)."""
        path = local(location)
        if path is not None:  # a reader elsewhere, and lineage, need where it is, not where from
            location = str(path.absolute())
        data: dict[str, Any] = {"path": location, "type": kind}  # ``kind`` names the event
        if metrics:
            data["metrics"] = dict(metrics)
        self._event("checkpoint", step=step, **data)
        self.sweep()
        with self._lock:
            self._live[location] = step
        if path is not None and path.exists():
            self._start()
            self._jobs.put((step, location, path))

    def sweep(self) -> None:
        """Mark the checkpoints that are gone from disk (rotated away) as deleted."""
        with self._lock:
            gone = [(loc, step) for loc, step in self._live.items() if (p := local(loc)) and not p.exists()]
            for loc, _ in gone:
                del self._live[loc]
        for loc, step in gone:
            self._event("checkpoint_deleted", step=step, path=loc)

    def close(self, wait: float | None = None) -> None:
        """Wait up to ``wait`` seconds (``HASH_WAIT``) for the hashes still being computed; then the
        files not hashed yet are recorded with their size alone. Then mark what rotation removed."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join(HASH_WAIT if wait is None else wait)
            self._hasher.stop()
            self._thread.join()  # what is left is listing files and sending their sizes
        self.sweep()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="tunetrack-checkpoints", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            step, location, path = job
            try:
                listed = listing(path)
                digests = self._hasher.digests([path if path.is_file() else path / n for n, _ in listed])
            except FileNotFoundError:  # removed while hashed (rotation): marked deleted by ``sweep``
                continue
            except OSError as exc:  # unreadable: recorded without its files
                warn_once(f"checkpoint:{location}", f"checkpoint {location} could not be read: {exc!r}")
                continue
            # a digest None: not hashed before ``close``'s wait ran out
            files: list[dict[str, Any]] = [
                {"name": n, "size": size, "sha256": d} for (n, size), d in zip(listed, digests, strict=True)
            ]
            total = sum(f["size"] for f in files)
            kind = kind_of([f["name"] for f in files])
            self._event("checkpoint_files", step=step, path=location, files=files, bytes=total, type=kind)
