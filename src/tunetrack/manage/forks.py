"""The run a new fork branches from (``Tracker(fork_from="RUN@STEP")``), resolved with the readers for
the writer that creates the fork: ``RUN`` as every command reads it (an id, a unique name, a unique id
prefix: ``reader.find``), ``STEP`` checked against what the run holds, so a typo fails at ``start()``
instead of recording a run without the history it was meant to continue.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidFork, TunetrackError, one_line
from ..reader.find import find_run, split_run_step, store_at
from ..store.forks import ForkRef


def resolve(dir: str | os.PathLike[str], spec: str) -> tuple[ForkRef, dict[str, Any]]:
    """The reference a fork of ``spec`` stores (the parent's id, the step), and the parent's config.
    Raises ``InvalidFork`` (one line) for a run the store does not hold (or names ambiguously), a run
    with no step logged, or a step past its last one."""
    try:
        ref, step = split_run_step(spec)
    except ValueError as exc:
        raise InvalidFork(f"fork_from={exc}") from None
    if not ref:
        raise InvalidFork(f"fork_from={spec!r} names no run (RUN@STEP)")
    try:
        parent = find_run(store_at(dir), ref)
    except TunetrackError as exc:
        raise InvalidFork(f"fork_from={spec!r}: {one_line(exc)}") from None
    last = parent.last_step
    if last is None:
        raise InvalidFork(f"fork_from={spec!r}: run {parent.id} has no logged step to fork from")
    if step is not None and step > last:
        raise InvalidFork(f"fork_from={spec!r}: run {parent.id} ends at step {last}, before step {step}")
    return ForkRef(run=parent.id, step=last if step is None else step), parent.config
