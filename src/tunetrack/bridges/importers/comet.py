"""Comet offline experiment archives: ``tunetrack import comet ARCHIVE.zip...``.

An archive is what comet_ml writes for an offline experiment (``COMET_START_ONLINE=false``, or
``OfflineExperiment``) and what ``comet upload`` sends: a zip with ``experiment.json`` and a messages
file. Each archive becomes a tunetrack run (a resumed experiment writes one archive per attempt, with
the same experiment key: each is a run of its own, as ``comet upload`` would append them). Read with
comet_ml's own pieces (``backends.comet.read_archive``): its schema for the experiment file and its
message classes, so no Comet server or API key is needed. Imported: the params as the config (nested
again at Comet's ``|``), every metric point with its step and the time comet_ml stamped on it
(Comet's ``sys.*`` metrics as system metrics; its own ``process duration`` left out), the name, the project, the tags, Comet's "Others" as
``key=value`` tags, the host, and the state (what tunetrack's mirror recorded, else ``failed`` for an
experiment comet_ml recorded an error for, else ``finished``: an archive is written when the
experiment ends). Text samples, images, assets, code and output are not imported.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...backends.comet import Archive, read_archive
from ...backends.names import comet as names
from ...states import State
from .source import Imported, SourceError, SourceRun, nested, number, rows_of

#: the states tunetrack's mirror records that a tunetrack run can end in
_ENDS = (State.FINISHED, State.FAILED, State.KILLED, State.CRASHED)


def runs(paths: Iterable[str | os.PathLike[str]]) -> Iterator[SourceRun | Imported]:
    """Each archive named (a folder: the ``*.zip`` archives in it, as in ``COMET_OFFLINE_DIRECTORY``)."""
    try:
        import comet_ml  # noqa: F401 - its reader
    except ImportError:
        raise ImportError("importing Comet archives needs comet_ml: pip install 'tunetrack[comet]'") from None
    archives: list[Path] = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise SourceError(f"no such file or folder: {given}")
        found = sorted(path.glob("*.zip")) if path.is_dir() else [path]
        if not found:
            raise SourceError(f"no Comet offline archives (*.zip) in {given}")
        archives.extend(found)
    read = []
    for path in archives:  # every archive is read before any is imported: a bad one writes nothing
        try:
            read.append(read_archive(path))
        except ValueError as exc:
            raise SourceError(str(exc)) from None
    for archive in read:
        yield _run(archive)


def _run(archive: Archive) -> SourceRun:
    metrics = _stepped([p for p in archive.metrics if p[2] not in names.COMET_METRICS])
    points = sorted(  # stable: points logged together stay in their order
        (p for p in metrics if not p[2].startswith(names.SYSTEM)), key=lambda p: (p[0], p[1])
    )
    system = sorted((p for p in metrics if p[2].startswith(names.SYSTEM)), key=lambda p: (p[0], p[1]))
    others = archive.others
    state = others.get(names.STATE)
    if state not in _ENDS:
        state = State.FAILED if archive.error else State.FINISHED
    last = max([archive.started, *(p[0] for p in metrics[-1:])])
    return SourceRun(
        key=f"comet:{archive.key}:{int(archive.started * 1000)}",
        name=str(others.get(names.NAME) or archive.key),
        created=archive.started,
        rows=lambda: rows_of(points),
        project=archive.project or None,
        config=nested({k: v for k, v in archive.params.items() if k not in names.COMET_PARAMS}, names.NESTED),
        tags=[*archive.tags, *_other_tags(others)],
        state=state,
        ended=archive.stopped or last,
        error=archive.error if state == State.FAILED else None,
        system=lambda: rows_of(system),
        host=archive.host,
        origin={
            "from": "comet",
            "path": str(archive.path.resolve()),
            "experiment_key": archive.key,
            **({"workspace": archive.workspace} if archive.workspace else {}),
        },
        tunetrack_id=str(others[names.RUN_ID]) if names.RUN_ID in others else None,
    )


def _stepped(metrics: list[tuple[float, int | None, str, Any]]) -> list[tuple[float, int, str, Any]]:
    """Every point with a step: a point logged without one (Comet draws it after the one before)
    gets its metric's step so far, or 0."""
    last: dict[str, int] = {}
    out = []
    for when, step, name, value in metrics:
        at = last[name] = int(step) if step is not None else last.get(name, 0)
        out.append((when, at, name, number(value)))
    return out


def _other_tags(others: dict[str, Any]) -> list[str]:
    """The user's Others as tags: ``key`` for a value of true, else ``key=value`` (Comet's own and
    tunetrack's left out)."""
    return [
        key if value is True or value == "true" else f"{key}={value}"
        for key, value in sorted(others.items())
        if key not in names.COMET_OTHERS and not key.startswith(names.PREFIX)
    ]
