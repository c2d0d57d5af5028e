"""Artifacts as the Tracker logs and uses them (a part of ``Tracker``): ``log`` hashes and stores a
file, a folder or a reference on a thread of its own and then records an ``artifact`` event in the
run; ``use`` resolves ``name:alias`` at once, records ``artifact_used`` and marks the version used by
the run, so lineage reaches the run from the artifact and the artifact from the run. The store
(``store/artifacts.py``) keeps each distinct file once, whichever run logged it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .._warnings import warn_once
from ..errors import one_line
from ..writer import ArtifactStore, ArtifactVersion, FileEntry, check_alias, check_name
from .checkpoints import kind_of
from .files import Hasher, listing, local

#: what a run's event names an artifact's kind by (``kind`` names the event)
KIND_KEY = "type"


def source_name(location: str) -> str:
    """A name for an artifact logged without one: the last part of its path or URL."""
    return location.rstrip("/").rsplit("/", 1)[-1].split("@", 1)[0].replace(":", "-") or "artifact"


class Artifacts:
    """A run's artifacts. ``where`` gives the store's dir and the run's id once the run started (None
    without a store); ``event`` records an event in the run at a step."""

    def __init__(
        self, where: Callable[[], tuple[str | None, str | None]], event: Callable[..., None]
    ) -> None:
        self._where = where
        self._event = event
        self._pool: ThreadPoolExecutor | None = None
        self._store: ArtifactStore | None = None
        self._hasher = Hasher()  # its process starts at the first files to hash

    def store(self) -> ArtifactStore:
        dir, _ = self._where()
        if dir is None:
            raise ValueError("this run has no store (store=False): artifacts are kept in a store")
        if self._store is None:
            self._store = ArtifactStore(dir)
        return self._store

    def log(
        self,
        location: str,
        step: int,
        name: str | None,
        kind: str | None,
        aliases: Iterable[str],
        reference: bool | None,
        metadata: dict[str, Any] | None,
        digest: str | None = None,
        used: bool = False,
    ) -> Future[ArtifactVersion]:
        """Queue ``location`` to be stored (or recorded as a reference: a URL always, a local path with
        ``reference=True``); the future holds the version it became. ``used``: an input of the run
        (``Tracker.log_input``), recorded as used rather than produced. Bad arguments fail here."""
        name = check_name(name if name is not None else source_name(location))
        aliases = [check_alias(a) for a in aliases]
        path = local(location)
        if path is not None and not path.exists():
            raise FileNotFoundError(f"no file or folder {location!r} to log as an artifact")
        store = self.store()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, "tunetrack-artifacts")
        as_reference = path is None or bool(reference)
        return self._pool.submit(
            self._log, store, location, step, name, kind, aliases, as_reference, metadata, digest, used
        )

    def _log(
        self,
        store: ArtifactStore,
        location: str,
        step: int,
        name: str,
        kind: str | None,
        aliases: list[str],
        as_reference: bool,
        metadata: dict[str, Any] | None,
        digest: str | None,
        used: bool,
    ) -> ArtifactVersion:
        try:
            path = local(location)
            files = []
            if path is not None and digest is None:
                listed = [(rel, size, path if path.is_file() else path / rel) for rel, size in listing(path)]
                digests = self._hasher.digests([full for _, _, full in listed])
                files = [
                    (FileEntry(rel, size, d or ""), full)
                    for (rel, size, full), d in zip(listed, digests, strict=True)
                ]
                kind = kind or kind_of([f.name for f, _ in files])
            reference = (
                (os.path.abspath(location) if path is not None else location) if as_reference else None
            )
            _, run = self._where()
            version = store.log(
                name,
                files,
                kind=kind,
                reference=reference,
                run=None if used else run,
                aliases=aliases,
                metadata=metadata,
                digest=digest,
            )
            if used and run is not None:
                store.mark_used(version, run)
        except Exception as exc:  # the user's training goes on: said once, and kept in the future
            warn_once(
                f"artifact:{name}", f"artifact {name!r} from {location} was not stored: {one_line(exc)}"
            )
            raise
        self._event("artifact_used" if used else "artifact", step, **_event_data(version))
        return version

    def use(self, spec: str, step: int) -> ArtifactVersion:
        """The version ``spec`` names, recorded as used by this run."""
        store = self.store()
        version = store.resolve(spec)
        _, run = self._where()
        if run is not None:
            store.mark_used(version, run)
        self._event("artifact_used", step, **_event_data(version))
        return version

    def close(self) -> None:
        """Wait for the artifacts still being stored: a user who logged one wants it kept."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._hasher.stop()


def _event_data(version: ArtifactVersion) -> dict[str, Any]:
    return {
        "name": version.name,
        "version": version.version,
        "digest": version.digest,
        KIND_KEY: version.kind,
        "bytes": version.bytes,
        "reference": version.reference,
    }
