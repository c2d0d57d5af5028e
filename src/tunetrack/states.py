"""Run states: the one list every writer, reader, command and page uses.

A process records how it ended (``finished``, ``failed``, ``killed``) in its end record; ``running``
and ``crashed`` are never written, they are what a reader concludes from a process that has no end
record yet (alive, or silent past the staleness limit).
"""

from __future__ import annotations

RUNNING = "running"
FINISHED = "finished"
FAILED = "failed"
KILLED = "killed"
CRASHED = "crashed"

#: Every state a run can be in, in the order listings explain them.
STATES = (RUNNING, FINISHED, FAILED, KILLED, CRASHED)
#: The states a process records itself when it ends.
END_STATES = (FINISHED, FAILED, KILLED)
