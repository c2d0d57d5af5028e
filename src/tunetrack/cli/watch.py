"""``tunetrack watch``: alerts for what a run cannot say itself.

A process killed with SIGKILL, by the OOM killer or with its machine never runs its own alert. The
watcher polls a store (a folder or an object store) and alerts when a run it has seen running turns
``crashed`` (its heartbeat stopped: the staleness rule every reader uses), and when a running run
logs no new step for ``stall`` seconds (a hung collective, a dead data loader). Each happens once
per run; a run that comes back to life and stalls again alerts again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..monitoring.alerts import Alert
from ..reader import Run
from ..states import State


@dataclass
class Seen:
    state: str
    step: int | None
    #: when its step last changed (monotonic seconds)
    changed: float
    stalled: bool = False


class Watcher:
    """What the runs of a store were at the last poll; ``poll(runs)`` returns the alerts due."""

    def __init__(self, stall: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stall = stall or None
        self.clock = clock
        self.started = time.time()
        self.seen: dict[str, Seen] = {}

    def poll(self, runs: Iterable[Run]) -> list[Alert]:
        now, alerts = self.clock(), []
        for run in runs:
            state, prev = run.state, self.seen.get(run.id)
            if state not in (State.RUNNING, State.CRASHED):
                self.seen[run.id] = Seen(state, None, now)
                continue
            step = run.latest().get("step")
            fresh = prev is None or prev.state != state or prev.step != step
            seen = Seen(state, step, now) if fresh else prev
            assert seen is not None
            was_running = prev.state == State.RUNNING if prev else run.created >= self.started
            if state == State.CRASHED and was_running:
                since = time.strftime("%H:%M:%S", time.localtime(run.ended)) if run.ended else "?"
                alerts.append(
                    _alert(run, "run crashed", f"no heartbeat since {since}; last step {step}", "error")
                )
            elif (
                state == State.RUNNING
                and self.stall
                and not seen.stalled
                and now - seen.changed >= self.stall
            ):
                quiet = int(now - seen.changed)
                alerts.append(
                    _alert(run, "run stalled", f"no new step for {quiet} s (last step {step})", "warn")
                )
                seen.stalled = True
            self.seen[run.id] = seen
        return alerts


def _alert(run: Run, title: str, text: str, level: str) -> Alert:
    return Alert(title, text, level, run.id, run.name, run.project, run.state)
