"""The checkpoint an evaluation is of (``tunetrack.log_evaluation``), resolved with the readers for the
writer that records it: ``RUN@STEP`` as every command reads a run (an id, a unique name, a unique id
prefix: ``reader.find``), ``RUN`` alone for its latest checkpoint, or the checkpoint's location (a
folder, a file, a URL) as the run recorded it. A typo fails here, in one line that says what there
is, before anything is written: an evaluation attached to no checkpoint would be found by nobody.
"""

from __future__ import annotations

import os

from ..errors import CheckpointNotFound, TunetrackError, one_line
from ..reader.checkpoints import Checkpoint
from ..reader.find import all_runs, find_run, split_run_step, store_at
from ..store.evaluations import CheckpointRef


def _ref(c: Checkpoint) -> CheckpointRef:
    return CheckpointRef(c.run, c.step, c.path, c.time)


def resolve(
    dir: str | os.PathLike[str] | None, spec: str | os.PathLike[str] | Checkpoint | CheckpointRef
) -> CheckpointRef:
    """The checkpoint ``spec`` names in the store at ``dir``: a ``Checkpoint`` read back (or one
    resolved already), ``RUN@STEP``,
    ``RUN`` (its latest checkpoint), or the location it was saved to. Raises ``CheckpointNotFound``
    (one line) otherwise."""
    if isinstance(spec, CheckpointRef):
        return spec
    if isinstance(spec, Checkpoint):
        return _ref(spec)
    text = os.fspath(spec)
    if "://" in text or os.path.exists(text):
        return _by_location(dir, text)
    try:
        return _by_step(dir, text)
    except CheckpointNotFound:
        if os.sep in text:  # a path that is gone from disk (rotation, another machine's): by location
            return _by_location(dir, text)
        raise


def _by_step(dir: str | os.PathLike[str] | None, spec: str) -> CheckpointRef:
    try:
        ref, step = split_run_step(spec)
    except ValueError as exc:
        raise CheckpointNotFound(f"checkpoint {exc}") from None
    try:
        run = find_run(store_at(dir), ref)
    except TunetrackError as exc:
        raise CheckpointNotFound(f"checkpoint {spec!r}: {one_line(exc)}") from None
    found = run.checkpoints()
    if not found:
        raise CheckpointNotFound(f"checkpoint {spec!r}: run {run.id} ({run.name}) recorded no checkpoint")
    if step is None:
        return _ref(found[-1])
    at_step = [c for c in found if c.step == step]
    if not at_step:
        steps = ", ".join(str(c.step) for c in found)
        raise CheckpointNotFound(
            f"checkpoint {spec!r}: run {run.id} ({run.name}) has no checkpoint at step {step} "
            f"(its checkpoints are at steps {steps})"
        )
    return _ref(at_step[-1])  # two saves at one step (a folder and a file): the later one


def _by_location(dir: str | os.PathLike[str] | None, location: str) -> CheckpointRef:
    """The checkpoint recorded at ``location`` by any run of the store; where several runs saved to
    the same place (an output folder used again), the latest save: its weights are what is there."""
    wanted = _normal(location)
    found = [c for run in all_runs(store_at(dir)) for c in run.checkpoints() if _normal(c.path) == wanted]
    if not found:
        raise CheckpointNotFound(f"checkpoint {location!r}: no run recorded a checkpoint there")
    return _ref(max(found, key=lambda c: c.time))


def _normal(location: str) -> str:
    return location if "://" in location else os.path.normpath(os.path.abspath(location))
