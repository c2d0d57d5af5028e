"""Aliases moved by hand (``tunetrack artifacts NAME:VERSION --alias production``): a promotion is an
edit of the artifact, a file of its own in the store (``store/artifacts.py``), never a change to one."""

from __future__ import annotations

import os

from ..reader.artifacts import open_artifacts
from ..store.artifacts import ArtifactVersion, parse_spec


def move_alias(spec: str, alias: str, dir: str | os.PathLike[str] | None = None) -> ArtifactVersion:
    """Point ``alias`` at the version ``spec`` names (taking it off the version that had it)."""
    store = open_artifacts(dir)
    version = store.resolve(spec)
    store.set_alias(version.name, version.version, alias)
    return version


def remove_alias(spec: str, alias: str, dir: str | os.PathLike[str] | None = None) -> str:
    """Take ``alias`` off the artifact ``spec`` names; its name."""
    name, _ = parse_spec(spec)
    open_artifacts(dir).remove_alias(name, alias)
    return name
