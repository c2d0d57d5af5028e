"""Run states: the one vocabulary every writer, reader, command and page uses.

A process records how it ended (``finished``, ``failed``, ``killed``, ``stopped``) in its end record; ``running``
and ``crashed`` are never written, they are what a reader concludes from a process that has no end
record yet (alive, or silent past the staleness limit). ``State`` members are the strings stored and
shown, so they compare equal to a state read back from a file, and JSON writes them as they are.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """A run's (or a process's) state, in the order listings explain them."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    KILLED = "killed"
    CRASHED = "crashed"
    #: ended early because someone (``tunetrack stop``, the dashboard, an agent) or a rule asked it to:
    #: its adapter stopped training the way the framework stops cleanly; who asked and why is the
    #: run's stop request (``edits.Identity.stop``)
    STOPPED = "stopped"


#: Each state's colour in a terminal (rich's names; read on dark and light backgrounds alike): the
#: CLI's tables and the terminal view
COLOURS: dict[str, str] = {
    State.RUNNING: "cyan",
    State.FINISHED: "green",
    State.FAILED: "red",
    State.KILLED: "yellow",
    State.CRASHED: "magenta",
    State.STOPPED: "blue",
}

#: Every state a run can be in, as the strings a user types (``--state``, ``state = 'failed'``).
STATES: tuple[str, ...] = tuple(state.value for state in State)
