"""A store's artifacts as readers see them (``store/artifacts.py`` keeps them): their names, each one's
versions with aliases and the runs that used them, a version by ``name:alias``, its files downloaded.
Moving an alias is an edit (``manage.artifacts``)."""

from __future__ import annotations

import os

from .. import settings
from ..store.artifacts import ArtifactStore, ArtifactVersion


def open_artifacts(dir: str | os.PathLike[str] | None = None) -> ArtifactStore:
    """The artifacts of the store at ``dir`` (else ``$TUNETRACK_DIR``, else ``./tunetrack_runs``)."""
    return ArtifactStore(settings.store_dir(dir))


def latest_versions(
    dir: str | os.PathLike[str] | None = None, kind: str | None = None
) -> list[ArtifactVersion]:
    """Each artifact's latest version (of ``kind`` alone, if given), by name."""
    store = open_artifacts(dir)
    latest = [versions[-1] for name in store.names() if (versions := store.versions(name))]
    return [v for v in latest if kind is None or v.kind == kind]
