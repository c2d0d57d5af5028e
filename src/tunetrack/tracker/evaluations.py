"""An evaluation of a checkpoint's weights attached to it after the fact: ``tunetrack.log_evaluation``.

The evaluation is written by a writing process of its own that joins the run, as a resumed process
does (``writer.opening``: its own ``<proc>.ttr``, metadata and end record, never a change to a file
another process writes), with the role ``evaluation``. That is what makes it safe at any time, from
any process or machine, while the run is still being written as well as long after it ended:

- the training process's files are never touched, and nothing is locked (the store's rule: one set
  of files per writing process; edits, ``tunetrack tag``, are new files too);
- the results are rows of the run's history at the checkpoint's step (``lm-eval/mmlu/acc``, so
  ``open_run(run).series(...)``, the charts, ``tunetrack query`` and the Parquet copy see them) and
  an event joined to the checkpoint by its location (``Checkpoint.evaluations``);
- the process never rewinds the run (a ``Tracker(resume=RUN)`` without ``resume_step`` does not
  either, but a Tracker also records system metrics, a console and a primary process: the run would
  read as finished once the evaluation ended, while training still runs). An ``evaluation`` process
  is not a primary one, so the run's state, last step and provenance stay the training's.

The rows carry the checkpoint's own time, not the time of the evaluation: in time order (the series,
a chart's time axis) they sit where the checkpoint was saved, the latest checkpoint's score is the
key's last value, and a later rewind that supersedes the checkpoint supersedes its scores with it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import capture
from ..config.tree import flatten
from ..states import State
from ..writer import EVALUATION_EVENT, CheckpointRef, Event, Role, RunRequest, Writer, resolve_checkpoint
from .provenance import run_metadata

#: how long recording an evaluation may take (writing a few rows: a wait this long means the store hangs)
WAIT = 120.0
_last_start = 0.0
_start_lock = threading.Lock()


@dataclass(frozen=True)
class Evaluated:
    """An evaluation as recorded: the checkpoint's run, step and location, the suite, and the keys
    its results have in the run's history (``<suite>/<key>``)."""

    run: str
    step: int
    path: str
    suite: str
    keys: list[str]


def find_checkpoint(checkpoint: Any, dir: str | os.PathLike[str] | None = None) -> CheckpointRef:
    """The recorded checkpoint ``checkpoint`` names (as ``log_evaluation`` takes it): its run, step,
    location and time; ``errors.CheckpointNotFound`` (one line) if no run recorded it. An evaluator
    resolves it first to learn where the weights are, then hands the result to ``log_evaluation``."""
    return resolve_checkpoint(dir, checkpoint)


def log_evaluation(
    checkpoint: Any,
    results: Mapping[str, Any],
    suite: str = "eval",
    dir: str | os.PathLike[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Evaluated:
    """Attach ``results`` (``{"mmlu/acc": 0.41}``; nested dicts are flattened with ``/``) of evaluating
    ``checkpoint`` with ``suite`` to it: ``RUN@STEP``, ``RUN`` (its latest checkpoint), the location it
    was saved to, or a ``Checkpoint`` read back (``open_run(run).checkpoints()``). They land on the
    checkpoint (``Checkpoint.evaluations[suite]``, every evaluation kept, the latest shown by
    ``tunetrack checkpoints RUN --suite SUITE``) and in the run's history at the checkpoint's step as
    ``<suite>/<key>``. ``config``: how it was evaluated (tasks, shots, the evaluator's version).

    Works from any process, during the run or after it ended (see the module's docstring for how).
    Unlike the Tracker's training-time calls it raises: ``errors.CheckpointNotFound`` (one line)
    for a checkpoint no run recorded, ``ValueError`` for empty results, ``OSError`` for a store that
    cannot be written."""
    if not suite or "/" in suite:
        raise ValueError(f"suite={suite!r}: a non-empty name without '/' (lm-eval, humaneval)")
    flat = flatten(dict(results), sep="/")
    if not flat:
        raise ValueError("log_evaluation: no results to record")
    target = resolve_checkpoint(dir, checkpoint)
    row = {f"{suite}/{key}": value for key, value in flat.items()}
    writer = Writer(health=None, strict=True)
    request = RunRequest(
        id=target.run,
        name=None,
        project=None,
        tags=[],
        created=_start_time(),
        process={**run_metadata(), "role": Role.EVALUATION},
    )
    writer.open(dir, request)
    writer.start()
    channel = writer.channel
    if not channel.put_row(target.step, target.time, row, all(type(v) is float for v in row.values()), WAIT):
        writer.finish(State.FAILED, "the writer took no rows", timeout=WAIT)
        raise OSError(f"could not record the evaluation of {target.path} in run {target.run}")
    data = {"path": target.path, "suite": suite, "results": flat, "config": dict(config or {})}
    channel.send(Event(EVALUATION_EVENT, target.step, time.time(), capture(data)))
    if not writer.finish(State.FINISHED, timeout=WAIT):
        raise OSError(f"the evaluation of {target.path} was not stored in run {target.run} within {WAIT:g} s")
    return Evaluated(target.run, target.step, target.path, suite, sorted(row))


def _start_time() -> float:
    """Now, and later than the last evaluation this process recorded: a process's files are named by
    its pid and start in milliseconds (``layout.proc_name``), so two evaluations never share them."""
    global _last_start
    with _start_lock:
        _last_start = max(time.time(), _last_start + 0.002)
        return _last_start
