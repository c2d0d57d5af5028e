"""An evaluation of a checkpoint as a run records it: the one definition the writer's side
(``tracker.evaluations``) and the readers (``reader.checkpoints``) share.

It is an event of ``EVENT``'s kind at the checkpoint's step, in the records of a process of its own
(role ``evaluation``), whose data is the checkpoint's ``path`` (what joins it to the checkpoint), the
``suite``, its flat ``results`` and the ``config`` it was run with; the same results are that
process's rows at the step, as ``<suite>/<key>``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the kind of the event an evaluation of a checkpoint is recorded as
EVENT = "checkpoint_evaluation"


@dataclass(frozen=True)
class CheckpointRef:
    """A recorded checkpoint, as an evaluation names it: its run, the step and location it was saved
    at, and when (the evaluation's rows carry that time)."""

    run: str
    step: int
    path: str
    time: float
