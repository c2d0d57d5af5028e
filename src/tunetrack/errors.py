"""Exceptions raised by tunetrack's setup and read paths.

Training-time faults never raise (they warn once and are counted); these errors are for mistakes a
user should fix before or after training: naming a run that does not exist, an ambiguous prefix, or a
bad value in ``strict`` mode.
"""

from __future__ import annotations


def one_line(exc: BaseException) -> str:
    """What a user is told of an error: its message's first line (or the exception's name when it has
    none). The one wording of a failure for the command line, the dashboard's answers, the agents'
    tools and the object store's errors, so the same mistake reads the same wherever it is made."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class TunetrackError(LookupError):
    """Base class for every error tunetrack raises on purpose."""


class NotVisible(Exception):
    """A run in a project the reader may not see (a team's dashboard, ``reader.visible``): not a
    ``TunetrackError``, so no route's "no such run" takes it for one; the dashboard answers 403."""


class RunNotFound(TunetrackError):
    """No run matches the id, prefix or name that was given."""


class ArtifactNotFound(TunetrackError):
    """An artifact name, version or alias the store does not hold; the message says what it holds."""


class AmbiguousRun(TunetrackError):
    """A prefix or name matches several runs; the message lists them."""


class RunInUse(TunetrackError):
    """The run is still being written (``tunetrack rm`` without ``--force``)."""


class RunNotRunning(TunetrackError):
    """A run that has ended was asked to stop (``tunetrack stop``)."""


class InvalidValue(TunetrackError, TypeError):
    """A logged value tunetrack cannot store (raised only with ``strict=True``)."""


class UnknownName(TunetrackError, ValueError):
    """A metric, config key or column that none of the runs asked about has (a typo, or a name another
    framework uses): the message names it and the closest names they do have, so a question never
    gets an empty answer in silence."""


class AmbiguousName(TunetrackError, ValueError):
    """A short config name (``lr``) that finds several keys with different values in one run; the
    message lists them, to be named in full."""


class InvalidFork(TunetrackError, ValueError):
    """``fork_from`` names no run, a run that holds no step to branch from, or a step past the run's
    last one. ``Tracker.start()`` raises it, in every mode: a fork without the history it was asked to
    continue is not the run its user meant, and the mistake is cheapest before the first step."""


class CheckpointNotFound(TunetrackError, ValueError):
    """``log_evaluation`` names a checkpoint no run recorded: a run without a checkpoint at that step
    (the message lists the steps it has), or a path no run saved a checkpoint to."""
